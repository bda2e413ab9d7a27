package shim_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// waitFile waits until name exists.
func waitFile(t *testing.T, name string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(name); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", name)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestServeLeaseExpires: a helper whose client sends nothing (its stdin
// stays open, as over pods/exec after the client vanished) exits once the
// lease runs out, and removes its pid file.
func TestServeLeaseExpires(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "helper.pid")
	cmd := shimCmd(t, "serve", "--pidfile", pidfile, "--lease", "300ms")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, pidfile)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve: %v: %s", err, stderr.String())
		}
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("serve still running 5s after a 300ms lease")
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("serve exited after %s, before its lease", d)
	}
	if !strings.Contains(stderr.String(), "lease") {
		t.Errorf("stderr %q does not say why it exited", stderr.String())
	}
	if _, err := os.Stat(pidfile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pid file left behind: %v", err)
	}
}

// TestServeKillRequest: `__shim kill PIDFILE` ends a helper (whose stdin
// stays open) and waits for it.
func TestServeKillRequest(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "helper.pid")
	cmd := shimCmd(t, "serve", "--pidfile", pidfile)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	waitFile(t, pidfile)
	if out, err := shimCmd(t, "kill", "--wait", "4s", pidfile).CombinedOutput(); err != nil {
		t.Errorf("__shim kill: %v: %s", err, out)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		t.Fatal("serve still running after __shim kill")
	}
	if _, err := os.Stat(pidfile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pid file left behind: %v", err)
	}
}

func TestServeUsage(t *testing.T) {
	if err := shimCmd(t, "serve", "extra").Run(); err == nil {
		t.Error("serve with an argument succeeded")
	}
}
