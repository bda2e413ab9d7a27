package shim_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops/shim"
)

// keepWait waits for a keeper to exit (at most 10 s) and returns its
// stderr.
func keepWait(t *testing.T, done <-chan error, stderr *bytes.Buffer) string {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("keep: %v: %s", err, stderr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("keep still running 10s after its limit")
	}
	return stderr.String()
}

// TestKeepTTL: the keeper exits once its time to live has passed, and
// records its start and limits.
func TestKeepTTL(t *testing.T) {
	state := filepath.Join(t.TempDir(), "lifetime.json")
	cmd := shimCmd(t, "keep", "--ttl", "300ms", "--state", state)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	out := keepWait(t, done, &stderr)
	if time.Since(start) < 300*time.Millisecond || !strings.Contains(out, "time to live") {
		t.Errorf("keep ended after %s: %q", time.Since(start), out)
	}
	var st shim.LifetimeState
	b, err := os.ReadFile(state)
	if err != nil || json.Unmarshal(b, &st) != nil || st.TTLMS != 300 || st.StartMS < start.UnixMilli()-1000 {
		t.Errorf("state %q (%v)", b, err)
	}
}

// TestKeepWaitsForClaim: a pool member's keeper starts its clocks at the
// first SIGUSR1 only; unclaimed, --max-idle ends it.
func TestKeepWaitsForClaim(t *testing.T) {
	state := filepath.Join(t.TempDir(), "lifetime.json")
	cmd := shimCmd(t, "keep", "--wait-claim", "--ttl", "200ms", "--state", state)
	pr, pw, _ := os.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	defer cmd.Process.Kill()
	br := bufio.NewReader(pr)
	if line, _ := br.ReadString('\n'); !strings.Contains(line, "waiting for the claim") {
		t.Fatalf("first line %q", line)
	}
	if _, err := os.Stat(state); err == nil {
		t.Fatal("state written before the claim")
	}
	cmd.Process.Signal(syscall.SIGUSR1)
	rest, _ := bufio.NewReader(br).ReadString('\n')
	if !strings.Contains(rest, "time to live") {
		t.Errorf("after the claim: %q", rest)
	}
	cmd.Wait()
	if _, err := os.Stat(state); err != nil {
		t.Errorf("no state after the claim: %v", err)
	}

	cmd = shimCmd(t, "keep", "--wait-claim", "--ttl", "1h", "--max-idle", "200ms")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if out := keepWait(t, done, &stderr); !strings.Contains(out, "no claim within") {
		t.Errorf("unclaimed member: %q", out)
	}
}

// TestKeepIdle: activity (the file's time) keeps the sandbox alive; once
// it stops, the idle timeout ends it.
func TestKeepIdle(t *testing.T) {
	act := filepath.Join(t.TempDir(), "activity")
	cmd := shimCmd(t, "keep", "--idle", "1s", "--activity", act)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for end := time.Now().Add(2500 * time.Millisecond); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		now := time.Now()
		if err := os.WriteFile(act, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(act, now, now)
		select {
		case err := <-done:
			t.Fatalf("keep ended while active: %v: %s", err, stderr.String())
		default:
		}
	}
	if out := keepWait(t, done, &stderr); !strings.Contains(out, "idle timeout") {
		t.Errorf("keep: %q", out)
	}
}

func TestKeepUsage(t *testing.T) {
	for _, args := range [][]string{{"--ttl", "-1s"}, {"--idle", "1s"}, {"x"}, {"--ttl", "soon"}} {
		if err := shimCmd(t, append([]string{"keep"}, args...)...).Run(); err == nil {
			t.Errorf("keep %q succeeded", args)
		}
	}
}
