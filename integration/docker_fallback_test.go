package integration

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

// callProcesses lists the processes in the container that file scripts
// started (their argv carries the "pi-sandbox-call" token).
func callProcesses(t *testing.T, id string) []string {
	t.Helper()
	out, err := exec.Command("docker", "exec", id, "ps", "-o", "pid,args").CombinedOutput()
	if err != nil {
		t.Fatalf("ps: %v: %s", err, out)
	}
	var ps []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "pi-sandbox-call") || strings.Contains(l, "cat -- /workspace/fifo") {
			ps = append(ps, l)
		}
	}
	return ps
}

func dockerExec(t *testing.T, id, script string) {
	t.Helper()
	if out, err := exec.Command("docker", "exec", "-u", "1000:1000", id, "sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", script, err, out)
	}
}

// TestDockerFallbackAbortKills (17.11): an aborted file call of the
// exec fallback kills what it started in the container — cat blocked on a
// FIFO without a writer, a listing script — instead of leaving it there.
func TestDockerFallbackAbortKills(t *testing.T) {
	needImage(t, "pi-sandbox/busybox")
	id := upContainer(t, "pi-sandbox/busybox", "fallback-abort")
	b := newBackend(t, docker.Config{Container: id, NoHelper: true})
	dockerExec(t, id, "mkfifo /workspace/fifo && mkdir /workspace/big && cd /workspace/big && i=0; while [ $i -lt 20000 ]; do : > f$i; i=$((i+1)); done")

	ctx, cancel := context.WithCancel(t.Context())
	r, err := b.Open(ctx, "/workspace/fifo")
	if err != nil {
		t.Fatal(err)
	}
	readErr := make(chan error, 1)
	go func() { _, err := io.ReadAll(r); readErr <- err }()
	time.Sleep(200 * time.Millisecond) // let cat block in open(2)
	if ps := callProcesses(t, id); len(ps) == 0 {
		t.Fatal("the read of the FIFO is not running in the container")
	}
	cancel()
	select {
	case err := <-readErr:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("read after cancel = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a canceled read of a FIFO did not return")
	}
	r.Close()
	if ps := callProcesses(t, id); len(ps) > 0 {
		t.Errorf("after an aborted read, still running: %q", ps)
	}

	// A listing aborted while it runs.
	ctx, cancel = context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { _, err := b.ReadDir(ctx, "/workspace/big"); done <- err }()
	deadline := time.Now().Add(10 * time.Second)
	for len(callProcesses(t, id)) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err == nil {
		t.Log("the listing finished before the cancel")
	}
	if ps := callProcesses(t, id); len(ps) > 0 {
		t.Errorf("after an aborted listing, still running: %q", ps)
	}
}

// TestDockerFallbackLargeListing (17.11): the fallback lists 20,000
// entries completely (the listing is linear: one glob expansion per
// pattern, stat through xargs; it took 13 s with a quadratic `set --`).
func TestDockerFallbackLargeListing(t *testing.T) {
	needImage(t, "pi-sandbox/busybox")
	id := upContainer(t, "pi-sandbox/busybox", "fallback-ls")
	b := newBackend(t, docker.Config{Container: id, NoHelper: true})
	dockerExec(t, id, "mkdir /workspace/big && cd /workspace/big && i=0; while [ $i -lt 20000 ]; do : > f$i; i=$((i+1)); done; : > .hidden; : > ..dots; mkdir sub")
	start := time.Now()
	es, err := b.ReadDir(t.Context(), "/workspace/big")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("20,003 entries in %s", time.Since(start))
	if len(es) != 20003 {
		t.Fatalf("%d entries, want 20003", len(es))
	}
	seen := map[string]bool{}
	for _, e := range es {
		seen[e.Name()] = true
	}
	for _, n := range []string{"f0", "f19999", ".hidden", "..dots", "sub"} {
		if !seen[n] {
			t.Errorf("%s missing", n)
		}
	}
}
