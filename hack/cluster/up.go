package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"
)

// up starts the cluster unless a healthy one is running, and returns the kubeconfig path.
// A healthy cluster whose agent-sandbox controller does not run gets only the controller.
func up(cfg config) (string, error) {
	l := layout{cfg.stateDir}
	if healthy(l) {
		if agentSandboxRunning(l) {
			return l.kubeconfig(), nil
		}
		logf("the cluster runs but not its agent-sandbox controller; starting it")
		b, err := ensureBins(cfg)
		if err != nil {
			return "", err
		}
		api, err := newAPIClient(l)
		if err != nil {
			return "", err
		}
		if err := startAgentSandbox(l, b, api); err != nil {
			return "", err
		}
		return l.kubeconfig(), nil
	}
	if fileExists(l.dir) {
		logf("%s holds a cluster that is not healthy; tearing it down first", l.dir)
		if err := down(cfg); err != nil {
			return "", err
		}
	}
	t0 := time.Now()
	b, err := ensureBins(cfg)
	if err != nil {
		return "", err
	}
	for port, name := range ports {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			return "", fmt.Errorf("cluster: port %d (%s) is in use: %w", port, name, err)
		}
		ln.Close()
	}
	if err := ensureImages(cfg); err != nil {
		return "", err
	}
	t1 := time.Now()
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return "", fmt.Errorf("cluster: %w", err)
	}
	if err := recordHost(l); err != nil {
		return "", err
	}
	if err := startAll(l, b); err != nil {
		// Leave nothing half-started, but keep the logs.
		if keep, terr := os.MkdirTemp("", "pi-sandbox-cluster-logs-"); terr == nil && os.Rename(l.path("logs"), keep+"/logs") == nil {
			logf("start-up failed; the components' logs are in %s/logs", keep)
		}
		if derr := down(cfg); derr != nil {
			logf("%v", derr)
		}
		return "", err
	}
	logf("cluster ready in %s (after %s of builds and image checks); logs in %s",
		time.Since(t1).Round(10*time.Millisecond), t1.Sub(t0).Round(10*time.Millisecond), l.path("logs"))
	return l.kubeconfig(), nil
}

// healthy reports whether every component recorded in l is running and the node is Ready.
func healthy(l layout) bool {
	for _, c := range components {
		if recorded(l, c) == 0 {
			return false
		}
	}
	api, err := newAPIClient(l)
	return err == nil && api.readyz() == nil && api.nodeReady() == nil
}

// ensureImages builds the project's images with make images when one is missing.
func ensureImages(cfg config) error {
	args := append([]string{"image", "inspect"}, images...)
	if exec.Command("docker", args...).Run() == nil {
		return nil
	}
	logf("building the project's images (make images)")
	return run(cfg.repo, "make", "images")
}

func startAll(l layout, b bins) error {
	token, err := writePKI(l)
	if err != nil {
		return err
	}
	if err := writeConfigs(l, b, token); err != nil {
		return err
	}
	for _, d := range []string{l.etcdData(), l.kubeletRoot(), l.podLogs(), l.cniIPAM(), l.binLink()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
	}
	os.Symlink(b.k8s("kubectl"), l.path("bin", "kubectl"))
	os.Symlink(b.containerd("ctr"), l.path("bin", "ctr"))

	// containerd, with its shim first in PATH.
	pid, err := start(l, "containerd", b.containerd("containerd"),
		[]string{"PATH=" + b.containerdDir + ":" + os.Getenv("PATH")},
		"--config", l.path("containerd", "config.toml"))
	if err != nil {
		return err
	}
	if err := waitFor(l, "containerd", pid, time.Minute, func() error {
		return exec.Command(b.containerd("ctr"), "--address", l.containerdSock(), "version").Run()
	}); err != nil {
		return err
	}
	// The import (a docker save of the images, tens of seconds) overlaps the rest of the
	// start-up; nothing uses an image before up returns.
	imported := make(chan error, 1)
	go func() { imported <- importImages(l, b) }()

	pid, err = start(l, "etcd", b.etcd, nil,
		"--name", "default", "--data-dir", l.etcdData(),
		"--listen-client-urls", fmt.Sprintf("http://127.0.0.1:%d", etcdPort),
		"--advertise-client-urls", fmt.Sprintf("http://127.0.0.1:%d", etcdPort),
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", etcdPeerPort),
		"--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", etcdPeerPort),
		"--initial-cluster", fmt.Sprintf("default=http://127.0.0.1:%d", etcdPeerPort))
	if err != nil {
		return err
	}
	if err := waitFor(l, "etcd", pid, time.Minute, etcdHealthy); err != nil {
		return err
	}

	pid, err = start(l, "kube-apiserver", b.k8s("kube-apiserver"), nil,
		fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", etcdPort),
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", apiPort),
		"--tls-cert-file="+l.pki("apiserver.crt"), "--tls-private-key-file="+l.pki("apiserver.key"),
		"--client-ca-file="+l.pki("ca.crt"),
		"--token-auth-file="+l.pki("tokens.csv"),
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+l.pki("sa.pub"),
		"--service-account-signing-key-file="+l.pki("sa.key"),
		"--service-cluster-ip-range="+serviceRange,
		// The kubelet refuses a loopback node IP; it is reached by its name, localhost.
		"--kubelet-preferred-address-types=Hostname",
		"--allow-privileged=false",
		"--profiling=false")
	if err != nil {
		return err
	}
	api, err := newAPIClient(l)
	if err != nil {
		return err
	}
	if err := waitFor(l, "kube-apiserver", pid, 3*time.Minute, api.readyz); err != nil {
		return err
	}

	if _, err := start(l, "kube-controller-manager", b.k8s("kube-controller-manager"), nil,
		"--kubeconfig="+l.kubeconfig(), "--leader-elect=false", "--bind-address=127.0.0.1",
		"--service-account-private-key-file="+l.pki("sa.key"), "--root-ca-file="+l.pki("ca.crt"),
		"--profiling=false"); err != nil {
		return err
	}
	if _, err := start(l, "kube-scheduler", b.k8s("kube-scheduler"), nil,
		"--kubeconfig="+l.kubeconfig(), "--leader-elect=false", "--bind-address=127.0.0.1",
		"--profiling=false"); err != nil {
		return err
	}
	pid, err = start(l, "kubelet", b.k8s("kubelet"), nil,
		"--config="+l.path("kubelet-config.yaml"), "--kubeconfig="+l.kubeconfig(),
		"--hostname-override="+nodeName, "--root-dir="+l.kubeletRoot(), "--cert-dir="+l.path("kubelet-pki"))
	if err != nil {
		return err
	}
	if err := waitFor(l, "kubelet", pid, 3*time.Minute, api.nodeReady); err != nil {
		return err
	}
	// The kubelet sets a few kernel tunables at start (overcommit, panic on oops); this
	// machine is shared, so put them back now that it has.
	restoreSysctls(l)
	// Pods are refused until the default ServiceAccount exists.
	if err := waitFor(l, "kube-controller-manager", recorded(l, "kube-controller-manager"), 2*time.Minute, func() error {
		return api.do("GET", "/api/v1/namespaces/default/serviceaccounts/default", nil)
	}); err != nil {
		return err
	}
	if err := startAgentSandbox(l, b, api); err != nil {
		return err
	}
	return <-imported
}

func etcdHealthy() error {
	c := http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/health", etcdPort))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), `"true"`) {
		return fmt.Errorf("etcd /health: %s", b)
	}
	return nil
}

// importImages loads the pause image and the project's images into the CRI namespace.
func importImages(l layout, b bins) error {
	ctr := func(stdin io.Reader) error {
		cmd := exec.Command(b.containerd("ctr"), "--address", l.containerdSock(), "-n", "k8s.io",
			"images", "import", "--snapshotter", "overlayfs", "-")
		cmd.Stdin = stdin
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("cluster: ctr images import: %w: %s", err, out)
		}
		return nil
	}
	pause, err := pauseArchive(b.pause)
	if err != nil {
		return err
	}
	if err := ctr(strings.NewReader(string(pause))); err != nil {
		return err
	}
	save := exec.Command("docker", append([]string{"save"}, images...)...)
	save.Stderr = os.Stderr
	out, err := save.StdoutPipe()
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	if err := save.Start(); err != nil {
		return fmt.Errorf("cluster: docker save: %w", err)
	}
	ierr := ctr(out)
	if err := save.Wait(); err != nil {
		return fmt.Errorf("cluster: docker save %s: %w", strings.Join(images, " "), err)
	}
	return ierr
}
