package main

import "path/filepath"

// layout names every file and directory of one cluster's state.
type layout struct{ dir string }

func (l layout) path(elem ...string) string {
	return filepath.Join(append([]string{l.dir}, elem...)...)
}

func (l layout) kubeconfig() string      { return l.path("kubeconfig") }
func (l layout) pidFile(n string) string { return l.path("pids", n+".pid") }
func (l layout) logFile(n string) string { return l.path("logs", n+".log") }
func (l layout) pki(n string) string     { return l.path("pki", n) }
func (l layout) containerdSock() string  { return l.path("containerd", "containerd.sock") }
func (l layout) containerdRoot() string  { return l.path("containerd", "root") }
func (l layout) containerdState() string { return l.path("containerd", "state") }
func (l layout) kubeletRoot() string     { return l.path("kubelet") }
func (l layout) podLogs() string         { return l.path("pod-logs") }
func (l layout) cniConf() string         { return l.path("cni", "net.d") }
func (l layout) cniIPAM() string         { return l.path("cni", "ipam") }
func (l layout) etcdData() string        { return l.path("etcd") }
func (l layout) hostRecord() string      { return l.path("host-before.json") }
func (l layout) binLink() string         { return l.path("bin") }

// Fixed names and addresses. Everything listens on 127.0.0.1.
const (
	bridgeName   = "pisb0"           // the pod bridge: no gateway, no masquerading
	podSubnet    = "198.51.100.0/24" // TEST-NET-2: nothing routes there
	serviceRange = "10.96.0.0/16"
	cniNetwork   = "pi-sandbox-cluster"
	nodeName     = "localhost"
	apiPort      = 6443
	etcdPort     = 2379
	etcdPeerPort = 2380
	kubeletPort  = 10250
	// agentSandboxProbePort serves the agent-sandbox controller's /healthz and /readyz.
	agentSandboxProbePort = 10263
)

// ports are checked free before anything starts, so a clash fails fast with its name.
var ports = map[int]string{
	etcdPort: "etcd", etcdPeerPort: "etcd peer", apiPort: "kube-apiserver",
	kubeletPort: "kubelet", 10248: "kubelet healthz", 10257: "kube-controller-manager",
	10259: "kube-scheduler", agentSandboxProbePort: "agent-sandbox-controller health probe",
}

// components in start order; down stops them in reverse, with the pods in between. The
// agent-sandbox controller, started last and stopped first, is apart: up starts it alone
// when the rest runs.
var components = []string{"containerd", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet"}
