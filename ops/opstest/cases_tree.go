package opstest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

func treeCases() []testCase {
	return []testCase{
		{name: "Run/CancelKillsTree", fn: testCancelKillsTree("sleep 300 & echo $! > pids; sleep 300 & echo $! >> pids; echo ready; wait", false, 2)},
		{name: "Run/TimeoutKillsTree", fn: testTimeoutKillsTree},
		{name: "Run/OrphanHoldingStdout", fn: testOrphanHoldingStdout},
		{name: "Run/BackgroundKilledAtExit", fn: testBackgroundKilledAtExit},
		// The escapee records itself (and prints the marker) only once it
		// is in its own session, so the cancel comes after the escape.
		{name: "Run/SetsidEscapeeDiesOnCancel", fn: testCancelKillsTree("sleep 300 & echo $! > pids; setsid sh -c 'echo $$ >> pids; echo ready; exec sleep 300' & wait", true, 2)},
		{name: "Run/SetsidEscapeeDiesAtExit", fn: testSetsidAtExit},
	}
}

// requireShim skips a case that only a backend with the shim can pass.
func requireShim(t testing.TB, ctx context.Context, b ops.Backend) {
	if !b.Info().Has("shim") {
		t.Skip("no shim: a process that calls setsid escapes a process-group kill (see Info.Limits)")
	}
	if out, _ := run(ctx, b, "", "command -v setsid"); out == "" {
		t.Skip("no setsid command in the target")
	}
}

// testCancelKillsTree runs command (which records n pids in the file "pids"
// before it prints "ready"), cancels it and requires every pid dead.
func testCancelKillsTree(command string, needShim bool, n int) caseFunc {
	return func(t testing.TB, ctx context.Context, b ops.Backend) {
		if needShim {
			requireShim(t, ctx, b)
		}
		dir := scratch(t, ctx, b)
		err, cause, d := startThenCancel(t, ctx, b, &ops.Cmd{Dir: dir, Command: command})
		if d > 10*time.Second {
			t.Errorf("Run returned %s after cancel", d)
		}
		if !errors.Is(err, cause) || !errors.Is(err, ops.ErrCanceled) {
			t.Errorf("Run = %v; want errors.Is the cause and ops.ErrCanceled", err)
		}
		requireDead(t, ctx, b, dir, n)
	}
}

func testTimeoutKillsTree(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	sink := newMarkSink("ready\n")
	err := b.Run(ctx, &ops.Cmd{
		Dir:     dir,
		Command: "sleep 300 & echo $! > pids; (sleep 300; echo never) & echo $! >> pids; echo ready; wait",
		Output:  sink,
		Timeout: 2 * time.Second,
	})
	var te *ops.TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("Run = %v (%T), want *ops.TimeoutError", err, err)
	}
	if !strings.Contains(sink.String(), "ready") {
		t.Fatalf("the command did not get going before the timeout: %q", sink.String())
	}
	requireDead(t, ctx, b, dir, 2)
}

func testOrphanHoldingStdout(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	start := time.Now()
	out, err := run(ctx, b, dir, "sleep 300 & echo $! > pids; echo done")
	// A bound for a hang (the orphan sleeps 300 s), not a speed check:
	// a loaded engine (Podman under CI, no helper) has taken 11 s.
	if d := time.Since(start); d > 60*time.Second {
		t.Errorf("Run took %s with an orphan holding stdout", d)
	}
	if err != nil || out != "done\n" {
		t.Fatalf("Run = %q, %v; want done and exit 0", out, err)
	}
	requireLeftovers(t, ctx, b, dir, 1)
}

func testBackgroundKilledAtExit(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	out, err := run(ctx, b, dir, "sleep 300 >/dev/null 2>&1 & echo $! > pids; echo done")
	if err != nil || out != "done\n" {
		t.Fatalf("Run = %q, %v", out, err)
	}
	requireLeftovers(t, ctx, b, dir, 1)
}

func testSetsidAtExit(t testing.TB, ctx context.Context, b ops.Backend) {
	requireShim(t, ctx, b)
	dir := scratch(t, ctx, b)
	out, err := run(ctx, b, dir, `setsid sh -c 'echo $$ >> pids; exec sleep 300' >/dev/null 2>&1 &
setsid sh -c 'echo $$ >> pids; exec sleep 300' &
until [ -f pids ] && [ $(wc -l < pids) -ge 2 ]; do sleep 0.01; done; echo done`)
	if err != nil || out != "done\n" {
		t.Fatalf("Run = %q, %v", out, err)
	}
	requireLeftovers(t, ctx, b, dir, 2)
}

// requireLeftovers checks what became of the n processes a command that
// exited normally left running (recorded in dir/pids): a backend with the
// "background" capability keeps them (owned by the sandbox until they end
// or it closes); any other kills them with the command.
func requireLeftovers(t testing.TB, ctx context.Context, b ops.Backend, dir string, n int) {
	t.Helper()
	if !b.Info().Has("background") {
		requireDead(t, ctx, b, dir, n)
		return
	}
	pids := strings.Fields(sh(t, ctx, b, dir, "cat pids"))
	alive := strings.Fields(sh(t, ctx, b, dir, aliveScript))
	if len(pids) != n || len(alive) != n {
		t.Fatalf("background processes %v alive of %v, want all %d kept", alive, pids, n)
	}
	if pl, ok := b.(ops.ProcessLister); ok {
		ps, err := pl.Processes(ctx)
		if err != nil {
			t.Fatalf("Processes: %v", err)
		}
		listed := map[string]bool{}
		for _, p := range ps {
			listed[strconv.Itoa(p.PID)] = true
		}
		for _, p := range pids {
			if !listed[p] {
				t.Errorf("Processes = %v, lacks pid %s", ps, p)
			}
		}
	}
	// Stopped through bash, as an agent would.
	sh(t, ctx, b, dir, "kill -9 "+strings.Join(pids, " "))
	requireDead(t, ctx, b, dir, n)
}

// aliveScript prints the pids listed in the file "pids" that are alive;
// zombies (state Z or X in /proc/PID/stat) count as dead.
const aliveScript = `for p in $(cat pids); do
  if kill -0 "$p" 2>/dev/null; then
    s=$(sed 's/.*) //' /proc/$p/stat 2>/dev/null | cut -c1)
    case "$s" in Z|X|"") ;; *) echo "$p";; esac
  fi
done`

// requireDead checks, through a second Run, that the n processes recorded
// in dir/pids are dead, allowing a few seconds for the kill to land. It
// kills survivors so that a failing backend does not leak them.
func requireDead(t testing.TB, ctx context.Context, b ops.Backend, dir string, n int) {
	t.Helper()
	pids := strings.Fields(sh(t, ctx, b, dir, "cat pids"))
	if len(pids) != n {
		t.Fatalf("pids file lists %v, want %d pids", pids, n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		alive := strings.Fields(sh(t, ctx, b, dir, aliveScript))
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			_, _ = run(context.Background(), b, dir, "kill -9 "+strings.Join(alive, " "))
			t.Fatalf("processes still alive 5s after the command ended: %v (of %v)", alive, pids)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
