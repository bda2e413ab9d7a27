package helper_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops/helper"
	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

// TestRelayLogFIFO: a FIFO at the daemon's log (with no daemon listening)
// never blocks the next relay: it starts a fresh daemon with a new regular
// log, well within the session's start.
func TestRelayLogFIFO(t *testing.T) {
	exe, dir := testExe(t), daemonDir(t)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "helper.log")
	if err := syscall.Mkfifo(log, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		c, err := helper.New(ctx, helper.Config{
			Name:  "relay",
			Dial:  helper.RelayDial(exe, shimEnv(), dir, ""),
			Hello: proto.Hello{WorkDir: proto.Str(t.TempDir()), SpillDir: proto.Str(t.TempDir())},
		})
		if err == nil {
			c.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("client: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the relay hangs on the FIFO at helper.log")
	}
	if fi, err := os.Lstat(log); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("helper.log after the start: %v, %v; want a regular file", fi.Mode(), err)
	}
}

// TestRelayLogUnreplaceable: a log that is no regular file and cannot be
// removed fails the relay at once, saying why.
func TestRelayLogUnreplaceable(t *testing.T) {
	exe, dir := testExe(t), daemonDir(t)
	if err := os.MkdirAll(filepath.Join(dir, "helper.log", "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o700)
	cmd := exec.Command(exe, "__shim", "relay", dir)
	cmd.Env = shimEnv()
	cmd.Stdin = strings.NewReader("")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "helper.log is not a regular file") {
		t.Fatalf("relay with a directory at helper.log: %v: %s", err, out)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the relay took %s to fail", d)
	}
}
