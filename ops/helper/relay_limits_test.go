//go:build linux

package helper_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// writes10K fails under RLIMIT_FSIZE=1000.
const writes10K = "head -c 10240 /dev/zero > big && wc -c < big && rm big"

// TestRelayDaemonLimitsChangedByCommand: a command that lowers the helper
// daemon's limits is told the daemon is replaced; the next call reaches a
// fresh daemon (a new exec, the limits it started with) that says it was
// restarted, and its commands write what the lowered limit refused. The
// client whose command did it goes on too: it dials the new daemon.
func TestRelayDaemonLimitsChangedByCommand(t *testing.T) {
	exe, dir := testExe(t), daemonDir(t)
	a := relayClient(t, exe, dir, 0)
	old := a.Hello().PID
	out := runOut(t, a, fmt.Sprintf("prlimit --pid %d --fsize=1000", old))
	if !strings.Contains(out, "changed the resource limits of the helper daemon (RLIMIT_FSIZE 1000/1000") {
		t.Errorf("the command's output %q does not say it changed the daemon's limits", out)
	}
	waitDead(t, []int{old}, 10*time.Second)

	b := relayClient(t, exe, dir, 0)
	if b.Hello().PID == old {
		t.Fatalf("the next client reached the daemon whose limits were lowered (%d)", old)
	}
	out = runOut(t, b, writes10K)
	if !strings.HasPrefix(out, "10240\n") || !strings.Contains(out, "the helper daemon was restarted: a command had changed its resource limits") {
		t.Fatalf("the next call's output %q: want 10240 and the restart note", out)
	}
	if out := runOut(t, b, writes10K); out != "10240\n" {
		t.Fatalf("a later call: %q, want 10240 without a note", out)
	}
	if out := runOut(t, a, writes10K); !strings.HasPrefix(out, "10240\n") {
		t.Fatalf("the first client's next call: %q, want 10240", out)
	}
}

// TestRelayDaemonLimitsChangedBetweenCalls: limits lowered while no call
// runs — open files too few for the daemon's own work — are seen when the
// next connection arrives, before its session is served.
func TestRelayDaemonLimitsChangedBetweenCalls(t *testing.T) {
	for _, c := range []struct {
		name     string
		resource int
		lim      unix.Rlimit
		// note: the restart is said. A daemon left 8 descriptors may
		// have none for its marker file when it notices, so there only
		// the replacement is required.
		note bool
	}{
		{"fsize", unix.RLIMIT_FSIZE, unix.Rlimit{Cur: 1000, Max: 1000}, true},
		{"nofile", unix.RLIMIT_NOFILE, unix.Rlimit{Cur: 8, Max: 8}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			exe, dir := testExe(t), daemonDir(t)
			a := relayClient(t, exe, dir, 0)
			old := a.Hello().PID
			runOut(t, a, "true")
			a.Close()
			if err := unix.Prlimit(old, c.resource, &c.lim, nil); err != nil {
				t.Fatalf("prlimit: %v", err)
			}
			b := relayClient(t, exe, dir, 0)
			if b.Hello().PID == old {
				t.Fatalf("the next client reached the daemon whose limits were lowered (%d)", old)
			}
			out := runOut(t, b, "ls / > /dev/null && "+writes10K)
			if !strings.HasPrefix(out, "10240\n") || (c.note && !strings.Contains(out, "the helper daemon was restarted")) {
				t.Fatalf("the next call's output %q: want 10240 and the restart note", out)
			}
			waitDead(t, []int{old}, 10*time.Second)
		})
	}
}
