package open_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops/k8s"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
	"github.com/pi-sandbox/pi-sandbox/sandbox/open"
	"github.com/pi-sandbox/pi-sandbox/sandbox/sandboxtest"
)

const k8sImage = "docker.io/pi-sandbox/busybox:latest"

// needCluster returns the kubeconfig of a reachable cluster: $KUBECONFIG,
// else the one make cluster writes; it skips (fails under CI=true)
// without one.
func needCluster(t *testing.T) (string, *k8s.Client) {
	t.Helper()
	kc := os.Getenv("KUBECONFIG")
	if kc == "" {
		dir := os.Getenv("PI_SANDBOX_CLUSTER_DIR")
		if dir == "" {
			home, _ := os.UserHomeDir()
			dir = filepath.Join(home, ".local", "state", "pi-sandbox", "cluster")
			if d := os.Getenv("XDG_STATE_HOME"); d != "" {
				dir = filepath.Join(d, "pi-sandbox", "cluster")
			}
		}
		kc = filepath.Join(dir, "kubeconfig")
	}
	if _, err := os.Stat(kc); err != nil {
		skipOrFail(t, "no cluster (set KUBECONFIG or run make cluster): "+err.Error())
	}
	c, err := k8s.NewClient(k8s.Config{Kubeconfig: kc})
	if err != nil {
		skipOrFail(t, err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := k8s.List(ctx, c); err != nil {
		skipOrFail(t, "cluster unreachable: "+err.Error())
	}
	if os.Getenv("PI_SANDBOX_SHIM_BIN") == "" {
		skipOrFail(t, "PI_SANDBOX_SHIM_BIN is not set (a static shim binary to upload into pods; make build)")
	}
	return kc, c
}

// TestEscapesK8s runs the escape suite in a hardened busybox pod, with and
// without the helper.
func TestEscapesK8s(t *testing.T) {
	kc, c := needCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pod, err := k8s.Up(ctx, k8s.Config{Kubeconfig: kc, Image: k8sImage, Labels: map[string]string{"pi-sandbox.test": "escape"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := k8s.Down(ctx, c, pod); err != nil {
			t.Error(err)
		}
	})
	for _, noHelper := range []bool{false, true} {
		t.Run(map[bool]string{false: "helper", true: "nohelper"}[noHelper], func(t *testing.T) {
			sandboxtest.Run(t, func(t *testing.T) sandboxtest.Target {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				base := map[bool]string{false: "/tmp/esc", true: "/tmp/esc-nohelper"}[noHelper]
				first, err := k8s.New(ctx, k8s.Config{Kubeconfig: kc, Pod: pod})
				if err != nil {
					t.Fatal(err)
				}
				w, o := base+"/work", base+"/outside"
				for _, d := range []string{w, o} {
					if err := first.MkdirAll(ctx, d, 0o755); err != nil {
						t.Fatal(err)
					}
				}
				first.Close()
				b, err := k8s.New(ctx, k8s.Config{Kubeconfig: kc, Pod: pod, WorkDir: w, NoHelper: noHelper})
				if err != nil {
					t.Fatal(err)
				}
				return sandboxtest.Target{Backend: b, Outside: o}
			})
		})
	}
}

// TestOpenK8sImage opens an ephemeral pod the way --backend k8s --image
// does (the shared --image flag), with the policy's environment, and
// Close deletes it.
func TestOpenK8sImage(t *testing.T) {
	kc, c := needCluster(t)
	t.Setenv("PI_K8S_PASS", "passed")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sb, err := open.Open(ctx, open.Config{Backend: "k8s", Docker: open.DockerConfig{Image: k8sImage}, K8s: open.K8sConfig{Kubeconfig: kc},
		Config: sandbox.Config{Policy: sandbox.Policy{Env: sandbox.EnvPolicy{Allow: []string{"PI_K8S_PASS"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := bashIn(t, ctx, sb, "echo $PI_K8S_PASS; pwd; id -u"); got != "passed\n/workspace\n1000\n" {
		t.Errorf("bash: %q", got)
	}
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	if list, err := k8s.List(ctx, c, "pi-sandbox.kind=ephemeral", "pi-sandbox.pid="+itoa(os.Getpid())); err != nil || len(list) != 0 {
		t.Errorf("pods left after Close: %v, %v", list, err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
