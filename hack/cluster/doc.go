// Command cluster brings up and tears down the single-node Kubernetes development cluster
// used by the k8s backend's tests (make cluster, make cluster-down).
//
// Everything is built from published Go modules and Debian packages: kube-apiserver,
// kube-controller-manager, kube-scheduler, kubelet and kubectl from k8s.io/kubernetes
// through the wrapper module in tools/k8s; containerd, its runc shim and ctr from
// github.com/containerd/containerd/v2 through tools/containerd (Debian's containerd 1.6
// drops CRI exec stderr and truncates exec stdin); etcd and the CNI plugins unpacked from
// Debian's .debs; the pause image compiled from Kubernetes' pause.c; the agent-sandbox
// controller from sigs.k8s.io/agent-sandbox through tools/agent-sandbox. Binaries are
// cached by version under $XDG_CACHE_HOME/pi-sandbox/cluster (default ~/.cache).
//
// "cluster build" only fills the cache (.ci/run starts it early, beside the image
// builds, which need the network and the disk more than the CPU).
//
// "cluster up" starts the components detached (new session, output in log files under
// the state directory), waits until the node is Ready, applies the agent-sandbox CRDs
// (Sandbox, SandboxClaim, SandboxTemplate, SandboxWarmPool), starts the agent-sandbox
// controller with its extensions (on the host, with the admin kubeconfig), imports the
// project's images (docker.io/pi-sandbox/busybox:latest, docker.io/pi-sandbox/debian:latest)
// and prints the kubeconfig's path as its last line. Run again with a healthy cluster, it
// only prints the path (after starting the agent-sandbox controller if that alone is not
// running). "cluster down" stops what up started, by recorded PID, and removes its
// mounts, cgroups, bridge, network namespaces, host files and state.
//
// Quirks of the machines this runs on, handled here: no CAP_SYS_RESOURCE (containerd's
// restrict_oom_score_adj, kubelet oomScoreAdj 0), cgroup v1 (failCgroupV1: false), a
// kubelet that refuses a loopback node IP (node name localhost, apiserver
// --kubelet-preferred-address-types=Hostname), and no traffic off 127.0.0.1 (everything
// listens on loopback; the pod bridge has no gateway and no masquerading). The Docker
// engine's own containerd is never touched: this containerd has its own socket, root,
// state and runc root, and its pods live under the kubelet's kubepods cgroups. Nor is the
// shared host's firewall or kernel: the kubelet adds no iptables chains
// (makeIPTablesUtilChains: false), and the tunables it sets at start are put back.
//
// It must run as root.
package main
