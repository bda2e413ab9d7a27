package integration

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/pi-sandbox/pi-sandbox/ops/k8s"
)

// Images as the cluster's containerd knows them (make cluster imports them).
const (
	k8sBusybox = "docker.io/pi-sandbox/busybox:latest"
	k8sDebian  = "docker.io/pi-sandbox/debian:latest"
)

var (
	k8sOnce   sync.Once
	k8sClient *k8s.Client
	k8sSkip   string
	k8sConfig string
)

// clusterKubeconfig is $KUBECONFIG, else the kubeconfig make cluster writes
// (hack/cluster: $PI_SANDBOX_CLUSTER_DIR, else
// $XDG_STATE_HOME/pi-sandbox/cluster, else ~/.local/state/pi-sandbox/cluster).
func clusterKubeconfig() string {
	if p := os.Getenv("KUBECONFIG"); p != "" {
		return p
	}
	dir := os.Getenv("PI_SANDBOX_CLUSTER_DIR")
	if dir == "" {
		if d := os.Getenv("XDG_STATE_HOME"); d != "" {
			dir = filepath.Join(d, "pi-sandbox", "cluster")
		} else {
			home, _ := os.UserHomeDir()
			dir = filepath.Join(home, ".local", "state", "pi-sandbox", "cluster")
		}
	}
	return filepath.Join(dir, "kubeconfig")
}

// needCluster skips (or fails under CI=true) without a reachable cluster
// and returns a client for its default namespace.
func needCluster(t testing.TB) *k8s.Client {
	t.Helper()
	if testing.Short() {
		t.Skip("integration tests do not run with -short")
	}
	k8sOnce.Do(func() {
		k8sConfig = clusterKubeconfig()
		if _, err := os.Stat(k8sConfig); err != nil {
			k8sSkip = "no cluster (set KUBECONFIG or run make cluster): " + err.Error()
			return
		}
		c, err := k8s.NewClient(k8s.Config{Kubeconfig: k8sConfig})
		if err != nil {
			k8sSkip = err.Error()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := k8s.List(ctx, c); err != nil {
			k8sSkip = "cluster " + k8sConfig + " unreachable: " + err.Error()
			return
		}
		k8sClient = c
	})
	if k8sClient == nil {
		skipOrFail(t, k8sSkip)
	}
	if piBinErr != nil {
		skipOrFail(t, "no shim binary: "+piBinErr.Error())
	}
	return k8sClient
}

// k8sCfg is cfg pointed at the test cluster with this run's label.
func k8sCfg(cfg k8s.Config, purpose string) k8s.Config {
	cfg.Kubeconfig = k8sConfig
	l := labels()
	l["pi-sandbox.test"] = purpose
	for k, v := range cfg.Labels {
		l[k] = v
	}
	cfg.Labels = l
	return cfg
}

// newK8s opens a backend (closed in t.Cleanup).
func newK8s(t testing.TB, cfg k8s.Config, purpose string) *k8s.Backend {
	t.Helper()
	needCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b, err := k8s.New(ctx, k8sCfg(cfg, purpose))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b
}

// upPod creates a long-lived pod (Up) for the test, deleted in t.Cleanup.
// Backends on it reach its helper daemon through the relay.
func upPod(t testing.TB, image, purpose string) string {
	t.Helper()
	return longPod(t, k8s.Config{Image: image}, purpose)
}

// plainPod is a long-lived hardened pod that is not an up sandbox (another
// kind label): backends on it use it as an existing pod, each with a
// helper of its own.
func plainPod(t testing.TB, image, purpose string) string {
	t.Helper()
	return longPod(t, k8s.Config{Image: image, Labels: map[string]string{k8s.LabelKind: "plain"}}, purpose)
}

func longPod(t testing.TB, cfg k8s.Config, purpose string) string {
	t.Helper()
	c := needCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	name, err := k8s.Up(ctx, k8sCfg(cfg, purpose))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := k8s.Down(ctx, c, name); err != nil {
			t.Error(err)
		}
	})
	return name
}

// k8sLeftovers deletes and returns this run's pods still present.
func k8sLeftovers() []string {
	if k8sClient == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := k8s.List(ctx, k8sClient, runLabel+"="+runID)
	if err != nil {
		return []string{err.Error()}
	}
	var names []string
	for _, s := range list {
		names = append(names, s.Name)
		k8s.Down(ctx, k8sClient, s.Name)
	}
	return names
}

// clientset is a typed client of c's cluster, for what the tests set up
// (the backend itself uses only the part of the API it needs).
func clientset(t testing.TB, c *k8s.Client) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.REST)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
