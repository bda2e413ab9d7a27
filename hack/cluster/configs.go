package main

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// writeConfigs writes containerd's, CNI's and the kubelet's configuration and the
// kubeconfig every component and test uses.
func writeConfigs(l layout, b bins, token string) error {
	ca, err := os.ReadFile(l.pki("ca.crt"))
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	files := map[string]string{
		l.path("containerd", "config.toml"):                  containerdConfig(l, b),
		filepath.Join(l.cniConf(), "10-pi-sandbox.conflist"): cniConfig(l),
		l.path("kubelet-config.yaml"):                        kubeletConfig(l),
		l.kubeconfig():                                       kubeconfig(ca, token),
	}
	for p, content := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
	}
	return nil
}

// containerdConfig keeps this containerd apart from the Docker engine's: its own socket,
// root, state, runc root and netns mounts; no NRI socket; CRI streaming on 127.0.0.1.
func containerdConfig(l layout, b bins) string {
	r := strings.NewReplacer(
		"@ROOT@", l.containerdRoot(), "@STATE@", l.containerdState(), "@SOCK@", l.containerdSock(),
		"@CNIBIN@", b.cniDir, "@CNICONF@", l.cniConf(), "@PAUSE@", "registry.k8s.io/pause:"+pauseTag,
		"@RUNCROOT@", l.path("containerd", "runc"), "@OPT@", l.path("containerd", "opt"))
	return r.Replace(`version = 3
root = "@ROOT@"
state = "@STATE@"

[grpc]
  address = "@SOCK@"
[ttrpc]
  address = "@SOCK@.ttrpc"

[plugins.'io.containerd.nri.v1.nri']
  disable = true
[plugins.'io.containerd.internal.v1.opt']
  path = "@OPT@"

[plugins.'io.containerd.cri.v1.runtime']
  enable_selinux = false
  # This machine's root lacks CAP_SYS_RESOURCE: without this every pod sandbox fails
  # ("runc create failed: can't get final child's PID from pipe").
  restrict_oom_score_adj = true
  disable_apparmor = true
  netns_mounts_under_state_dir = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = 'runc'
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = 'io.containerd.runc.v2'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = '/usr/sbin/runc'
        Root = "@RUNCROOT@"
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["@CNIBIN@"]
    conf_dir = "@CNICONF@"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "@PAUSE@"

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = '127.0.0.1'
  stream_server_port = '0'
`)
}

// cniConfig is a bridge with no gateway and no masquerading on TEST-NET-2: containerd
// needs an interface with an address per pod, and pods reach nothing through it.
func cniConfig(l layout) string {
	return fmt.Sprintf(`{"cniVersion": "1.0.0", "name": %q, "plugins": [
  {"type": "bridge", "bridge": %q, "isGateway": false, "ipMasq": false,
   "ipam": {"type": "host-local", "dataDir": %q, "ranges": [[{"subnet": %q}]]}},
  {"type": "loopback"}]}
`, cniNetwork, bridgeName, l.cniIPAM(), podSubnet)
}

// kubeletConfig: cgroup v1 allowed, cgroupfs like the Docker engine, no oom_score_adj
// (no CAP_SYS_RESOURCE), everything on 127.0.0.1, and no iptables chains or rules (the
// kubelet would add KUBE-FIREWALL to the shared host's INPUT and OUTPUT). Anonymous AlwaysAllow on the kubelet
// API serves only the apiserver→kubelet hop of this loopback-only test cluster.
func kubeletConfig(l layout) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://%s
address: 127.0.0.1
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
failSwapOn: false
oomScoreAdj: 0
podPidsLimit: 2048
serializeImagePulls: false
podLogsDir: %s
makeIPTablesUtilChains: false
`, l.containerdSock(), kubeletPort, l.podLogs())
}

func kubeconfig(ca []byte, token string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: pi-sandbox
  cluster:
    server: https://127.0.0.1:%d
    certificate-authority-data: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: pi-sandbox
  context: {cluster: pi-sandbox, user: admin, namespace: default}
current-context: pi-sandbox
`, apiPort, base64.StdEncoding.EncodeToString(ca), token)
}
