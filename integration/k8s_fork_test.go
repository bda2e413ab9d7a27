package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops/k8s"
)

// TestK8sFork: fork --backend k8s makes up pods like the source (user,
// memory limit, labels) whose working directory holds the checkpoint.
func TestK8sFork(t *testing.T) {
	c := needCluster(t)
	src := longPod(t, k8s.Config{Image: k8sBusybox, Memory: 300 << 20}, "fork")
	target := []string{"--backend", "k8s", "--kubeconfig", k8sConfig, "--pod", src}
	if _, errs, code := pi(t, "", append([]string{"tool", "bash", `{"command":"mkdir -p d && echo seed > d/f && chmod 640 d/f"}`}, target...)...); code != 0 {
		t.Fatalf("bash: code %d, %s", code, errs)
	}
	if _, errs, code := pi(t, "", append([]string{"checkpoint", "--name", "seed"}, target...)...); code != 0 {
		t.Fatalf("checkpoint: code %d, %s", code, errs)
	}
	out, errs, code := pi(t, "", append([]string{"fork", "--count", "2", "seed"}, target...)...)
	names := strings.Fields(out)
	for _, n := range names {
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			k8s.Down(ctx, c, n)
		})
	}
	if code != 0 || len(names) != 2 {
		t.Fatalf("fork --backend k8s: code %d, out %q, err %s", code, out, errs)
	}
	for _, n := range names {
		got, errs, code := pi(t, "", "tool", "bash", `{"command":"cat d/f; stat -c %a d/f; id -u"}`, "--backend", "k8s", "--kubeconfig", k8sConfig, "--pod", n, "--text")
		if code != 0 || got != "seed\n640\n1000\n" {
			t.Errorf("fork %s: code %d, %q, %s", n, code, got, errs)
		}
	}
	list, err := k8s.List(t.Context(), c, k8s.LabelForkOf+"="+src)
	if err != nil || len(list) != 2 {
		t.Fatalf("pods labelled fork-of %s: %v %v", src, list, err)
	}
	if _, errs, code := pi(t, "", append([]string{"fork", "--count", "1", "--pool", "p", "seed"}, target...)...); code != 2 || !strings.Contains(errs, "--pool is for the docker backend") {
		t.Errorf("fork --pool on k8s: code %d, %s", code, errs)
	}
}
