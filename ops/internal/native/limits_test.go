//go:build linux

package native_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// writes10K is a command that fails under RLIMIT_FSIZE=1000.
const writes10K = "head -c 10240 /dev/zero > big && wc -c < big"

// TestPooledShimLimitsChangedByItsCommand: a command that lowers the
// limits of its pooled shim (prlimit on $PPID) is told its shim was
// replaced, and the next command runs under another shim with the
// sandbox's limits.
func TestPooledShimLimitsChangedByItsCommand(t *testing.T) {
	b := open(t, pooled)
	shim, out := shimOf(t, b, "prlimit --pid $PPID --fsize=1000")
	if !strings.Contains(out, "changed the resource limits") || !strings.Contains(out, "RLIMIT_FSIZE 1000/1000") {
		t.Errorf("the command's output %q does not say its shim's limits changed", out)
	}
	next, out := shimOf(t, b, writes10K)
	if next == shim {
		t.Errorf("the next command ran under shim %s, whose limits were lowered", shim)
	}
	if out != "10240\n" {
		t.Fatalf("the next command: %q, want 10240", out)
	}
}

// TestIdlePooledShimLimitsChanged: an idle pooled shim whose limits another
// process lowered (a command of a call in parallel) is not given the next
// command.
func TestIdlePooledShimLimitsChanged(t *testing.T) {
	b := open(t, pooled)
	shim, _ := shimOf(t, b, "true")
	pid, err := strconv.Atoi(shim)
	if err != nil {
		t.Fatalf("shim pid %q", shim)
	}
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: 1000, Max: 1000}, nil); err != nil {
		t.Fatalf("prlimit: %v", err)
	}
	next, out := shimOf(t, b, writes10K)
	if next == shim {
		t.Errorf("the next command ran under shim %s, whose limits were lowered", shim)
	}
	if out != "10240\n" {
		t.Fatalf("the next command: %q, want 10240", out)
	}
	var buf bytes.Buffer
	if err := b.Run(t.Context(), &ops.Cmd{Command: "true", Output: &buf}); err != nil || buf.Len() != 0 {
		t.Fatalf("a command after: %q, %v", buf.String(), err)
	}
}
