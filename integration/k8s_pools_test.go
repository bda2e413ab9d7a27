package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops/k8s"
)

// k8sPool fills a pool of size members of the busybox image (extra flags
// added) through the CLI with agent-sandbox, drained at the end, and
// returns its name and the names pool fill printed.
func k8sPool(t *testing.T, purpose string, size int, extra ...string) (string, []string) {
	t.Helper()
	needCluster(t)
	name := fmt.Sprintf("it-%s-%d", purpose, time.Now().UnixNano()%1_000_000)
	t.Cleanup(func() {
		if _, errs, code := pi(t, "", "pool", "drain", "--backend", "k8s", "--kubeconfig", k8sConfig, name); code != 0 {
			t.Errorf("pool drain: exit %d: %s", code, errs)
		}
	})
	args := append([]string{"pool", "fill", "--backend", "k8s", "--kubeconfig", k8sConfig, "--image", k8sBusybox, name, "--size", fmt.Sprint(size)}, extra...)
	out, errs, code := pi(t, "", args...)
	if code != 0 {
		t.Fatalf("pool fill: exit %d: %s", code, errs)
	}
	return name, strings.Fields(out)
}

// k8sClaim claims a member of pool and returns its pod, downed at the end
// unless the test did.
func k8sClaim(t *testing.T, pool string, extra ...string) string {
	t.Helper()
	out, errs, code := pi(t, "", append([]string{"up", "--backend", "k8s", "--kubeconfig", k8sConfig, "--pool", pool}, extra...)...)
	pod := strings.TrimSpace(out)
	if code != 0 || pod == "" || strings.Contains(pod, "\n") {
		t.Fatalf("up --pool: exit %d, stdout %q, stderr %s", code, out, errs)
	}
	t.Cleanup(func() { pi(t, "", "down", "--backend", "k8s", "--kubeconfig", k8sConfig, pod) })
	return pod
}

// TestK8sPools: a pool of 2 through agent-sandbox's controller; a claim is
// one of its members, an ordinary up pod for the tools (read, write, edit,
// bash, a timed-out tree leaving nothing); two concurrent claims get two
// pods; down deletes the claim and the pod; pool ls counts them.
func TestK8sPools(t *testing.T) {
	pool, members := k8sPool(t, "pool", 2)
	if len(members) > 2 {
		t.Errorf("pool fill printed %q", members)
	}
	// The warmed members keep their labels (an up pod's, of the pool).
	c := needCluster(t)
	lctx, lcancel := context.WithTimeout(context.Background(), time.Minute)
	defer lcancel()
	idle, err := k8s.List(lctx, c, k8s.LabelPool+"="+pool, "!"+k8s.LabelClaim)
	if err != nil || len(idle) != 2 || idle[0].Kind != k8s.KindSandbox || idle[1].Kind != k8s.KindSandbox {
		t.Errorf("the idle members listed by their labels: %+v, %v", idle, err)
	}
	if out, errs, code := pi(t, "", "doctor", "--backend", "k8s", "--kubeconfig", k8sConfig, "--image", k8sBusybox); code != 0 || !strings.Contains(out, "ok    pools    agent-sandbox: CRDs installed; controller: answering") {
		t.Errorf("doctor: exit %d, %q, %s", code, out, errs)
	}
	pod := k8sClaim(t, pool)
	target := []string{"--backend", "k8s", "--kubeconfig", k8sConfig, "--pod", pod}
	call := func(tool, args string) string {
		t.Helper()
		out, errs, code := pi(t, "", append([]string{"tool", tool, args, "--text"}, target...)...)
		if code != 0 {
			t.Fatalf("%s %s: exit %d, %q, %s", tool, args, code, out, errs)
		}
		return out
	}
	call("write", `{"path":"p.txt","content":"one\ntwo\n"}`)
	call("edit", `{"path":"p.txt","edits":[{"oldText":"two","newText":"three"}]}`)
	if got := call("read", `{"path":"p.txt"}`); got != "one\nthree\n" {
		t.Errorf("read: %q", got)
	}
	// The claim's agent-sandbox Sandbox (named as its pod) is a target too.
	if out, errs, code := pi(t, "", "tool", "read", `{"path":"p.txt"}`, "--text", "--backend", "k8s", "--kubeconfig", k8sConfig, "--agent-sandbox", pod); code != 0 || out != "one\nthree\n" {
		t.Errorf("--agent-sandbox %s: exit %d, %q, %s", pod, code, out, errs)
	}
	if _, errs, code := pi(t, "", "tool", "ls", "{}", "--backend", "k8s", "--kubeconfig", k8sConfig, "--agent-sandbox", "no-such-sandbox"); code != 2 || !strings.Contains(errs, `no agent-sandbox Sandbox "no-such-sandbox"`) {
		t.Errorf("a missing Sandbox: exit %d, %s", code, errs)
	}
	out, _, _ := pi(t, "", append([]string{"tool", "bash", `{"command":"sleep 300 & sleep 301","timeout":1}`, "--text"}, target...)...)
	if !strings.Contains(out, "Command timed out after 1 seconds") {
		t.Errorf("timed-out bash: %q", out)
	}
	if got := call("bash", `{"command":"ps -o args | grep -c '[s]leep 30'; true"}`); strings.TrimSpace(got) != "0" {
		t.Errorf("the timed-out tree left %s processes", got)
	}

	// Two at once get two pods, neither the first claim's.
	var wg sync.WaitGroup
	pods := make([]string, 2)
	for i := range pods {
		wg.Go(func() { pods[i] = k8sClaim(t, pool) })
	}
	wg.Wait()
	if pods[0] == pods[1] || slices.Contains(pods, pod) {
		t.Errorf("claims got %q and %q (first %s)", pods[0], pods[1], pod)
	}
	out, errs, code := pi(t, "", "pool", "ls", "--backend", "k8s", "--kubeconfig", k8sConfig, "--json", pool)
	var rows []struct {
		Name    string `json:"name"`
		Size    int    `json:"size"`
		Claimed int    `json:"claimed"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 1 || rows[0].Claimed != 3 || rows[0].Size != 2 {
		t.Errorf("pool ls: exit %d, %q, %s", code, out, errs)
	}

	if out, errs, code := pi(t, "", "down", "--backend", "k8s", "--kubeconfig", k8sConfig, pod); code != 0 || strings.TrimSpace(out) != pod {
		t.Fatalf("down: exit %d, %q, %s", code, out, errs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := k8s.List(ctx, c, k8s.LabelClaim)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		if s.Name == pod {
			t.Errorf("pod %s still listed after down", pod)
		}
	}
}

// TestK8sPoolTTL: a pool's --ttl, or up's own, ends a claimed member by
// itself (the claim's shutdown time, enforced by the controller).
func TestK8sPoolTTL(t *testing.T) {
	withTTL, _ := k8sPool(t, "ttl", 1, "--ttl", "3s")
	without, _ := k8sPool(t, "nottl", 1)
	waitPodGone(t, k8sClaim(t, withTTL))
	waitPodGone(t, k8sClaim(t, without, "--ttl", "2s"))
}

// waitPodGone waits until pod is no longer listed.
func waitPodGone(t *testing.T, pod string) {
	t.Helper()
	c := needCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		list, err := k8s.List(ctx, c, k8s.LabelClaim)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(list, func(s k8s.Sandbox) bool { return s.Name == pod }) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pod %s of a claim with a ttl of seconds still there after 2 minutes", pod)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
