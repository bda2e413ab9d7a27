package search

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// TestGrepRefusesSpecialPath: a query naming a FIFO or a character device
// fails at once, saying what it is, instead of reading it (a FIFO without
// a writer would block until the abort, /dev/zero never end).
func TestGrepRefusesSpecialPath(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pipe")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, "/dev/zero"} {
		done := make(chan error, 1)
		go func() {
			_, err := collectGrep(t, engineGrep, ops.GrepQuery{Pattern: "x", Path: p})
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), p+" is not a regular file or a directory") {
				t.Errorf("grep %s: %v", p, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("grep %s did not return", p)
		}
	}
}
