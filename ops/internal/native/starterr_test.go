//go:build unix

package native

import (
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// TestStartErrorProcessLimit (17.13): a fork that fails with EAGAIN (a pids
// limit) is "could not fork: process limit reached", not an exec failure of
// the shell.
func TestStartErrorProcessLimit(t *testing.T) {
	err := startError("/w", "/bin/sh", &os.SyscallError{Syscall: "fork/exec", Err: syscall.EAGAIN})
	var se *ops.StartError
	if !errors.As(err, &se) || !errors.Is(err, ops.ErrProcessLimit) {
		t.Fatalf("startError(EAGAIN) = %v, want a StartError wrapping ops.ErrProcessLimit", err)
	}
	if err := startError("/w", "/bin/sh", syscall.ENOENT); errors.Is(err, ops.ErrProcessLimit) {
		t.Fatalf("startError(ENOENT) = %v", err)
	}
}
