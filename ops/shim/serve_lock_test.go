package shim

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

// TestLockDirHeldElsewhere: while another process holds the directory's
// flock, lockDir gives up after its bound with an error naming the
// directory, and at once when its context ends.
func TestLockDirHeldElsewhere(t *testing.T) {
	dir := t.TempDir()
	testenv.HoldFlock(t, dir)

	start := time.Now()
	_, err := lockDir(context.Background(), dir, 300*time.Millisecond)
	var le *ops.LockedError
	if !errors.As(err, &le) || le.Dir != dir {
		t.Fatalf("lockDir = %v, want a LockedError for %s", err, dir)
	}
	if want := "could not lock " + dir + ": held by another process"; err.Error() != "ops: "+want {
		t.Errorf("error %q", err)
	}
	if d := time.Since(start); d < 300*time.Millisecond || d > 5*time.Second {
		t.Errorf("gave up after %v, want the bound (300ms)", d)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err = lockDir(ctx, dir, time.Minute)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("lockDir with an ended context = %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("returned %v after the context's end", d)
	}
}

// TestLockDirFree: a free directory's lock is taken at once, and released.
func TestLockDirFree(t *testing.T) {
	dir := t.TempDir()
	for range 2 {
		unlock, err := lockDir(context.Background(), dir, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		unlock()
	}
}
