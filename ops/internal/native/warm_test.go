package native_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/native"
	"github.com/pi-sandbox/pi-sandbox/ops/opstest"
)

// pooled is the helper's configuration: pooled shims, background kept.
var pooled = native.Config{WarmShim: true, Background: true}

func TestConformancePooled(t *testing.T) {
	opstest.TestBackend(t, newBackend(pooled))
}

// shimOf returns the pid of the shim that ran command (its shell's parent)
// and the command's output after it.
func shimOf(t *testing.T, b *native.Backend, command string) (string, string) {
	t.Helper()
	var out bytes.Buffer
	err := b.Run(t.Context(), &ops.Cmd{Command: "echo $PPID; " + command, Output: &out})
	var ee *ops.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("%s: %v", command, err)
	}
	pid, rest, _ := strings.Cut(out.String(), "\n")
	return pid, rest
}

// TestPooledShimServesCommandAfterCommand: a command that ends normally
// and leaves nothing gives its shim back: the next one runs under the same
// process, with its own environment, directory and status.
func TestPooledShimServesCommandAfterCommand(t *testing.T) {
	b := open(t, pooled)
	first, _ := shimOf(t, b, "true")
	for i, c := range []struct{ command, want string }{
		{"echo $X", "\n"},
		{"X=1; echo $X; exit 3", "1\n"},
		{"echo $X", "\n"},
		{"cd /; pwd", "/\n"},
		{"pwd", b.Info().WorkDir + "\n"},
	} {
		pid, out := shimOf(t, b, c.command)
		if pid != first {
			t.Fatalf("run %d (%q): shim %s, want the first one, %s", i, c.command, pid, first)
		}
		if out != c.want {
			t.Errorf("run %d (%q): output %q, want %q", i, c.command, out, c.want)
		}
	}
	var out bytes.Buffer
	err := b.Run(t.Context(), &ops.Cmd{Command: "echo $Y", Env: []string{"Y=only-here"}, Output: &out})
	if err != nil || out.String() != "only-here\n" {
		t.Fatalf("Cmd.Env: %q, %v", out.String(), err)
	}
	if pid, out := shimOf(t, b, "echo $Y"); pid != first || out != "\n" {
		t.Fatalf("the next run saw %q under shim %s (want none, under %s)", out, pid, first)
	}
}

// TestPooledShimNotReusedAfterLeftovers: a shim whose command left a
// process (kept in the background), timed out, was killed by a signal or
// killed the shim itself runs nothing more; the next command still runs,
// under another shim.
func TestPooledShimNotReusedAfterLeftovers(t *testing.T) {
	b := open(t, pooled)
	for _, c := range []struct {
		name, command string
		timeout       time.Duration
	}{
		{"background", "sleep 30 & echo", 0},
		{"timeout", "sleep 30", 200 * time.Millisecond},
		{"signal", "kill -9 $$", 0},
		{"killed shim", "kill -9 $PPID", 0},
	} {
		before, _ := shimOf(t, b, "true")
		var out bytes.Buffer
		_ = b.Run(t.Context(), &ops.Cmd{Command: c.command, Output: &out, Timeout: c.timeout})
		after, _ := shimOf(t, b, "true")
		if after == before || after == "" {
			t.Errorf("%s: the next command ran under shim %q, the one before under %q", c.name, after, before)
		}
	}
	ps, err := b.Processes(t.Context())
	if err != nil || len(ps) != 1 || !strings.Contains(ps[0].Command, "sleep 30") {
		t.Fatalf("background processes %+v, %v: want the one sleep", ps, err)
	}
}

// parallelShims runs n commands in parallel and returns the set of shims
// they ran under; every output must be its own command's.
func parallelShims(t *testing.T, b *native.Backend, n int) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var mu sync.Mutex
	shims := map[string]bool{}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var out bytes.Buffer
			want := strings.Repeat("x", i+1)
			if err := b.Run(ctx, &ops.Cmd{Command: "sleep 0.1; echo $PPID " + want, Output: &out}); err != nil {
				t.Errorf("%d: %v", i, err)
				return
			}
			pid, got, _ := strings.Cut(strings.TrimSpace(out.String()), " ")
			if got != want {
				t.Errorf("%d: output %q, want %q", i, got, want)
			}
			mu.Lock()
			shims[pid] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(shims) != n {
		t.Fatalf("%d shims for %d parallel commands", len(shims), n)
	}
	return shims
}

// TestPooledShimsInParallel: parallel commands each get a shim of their
// own; the pool keeps as many as ran in parallel, so the next parallel
// batch starts none.
func TestPooledShimsInParallel(t *testing.T) {
	b := open(t, pooled)
	const parallel = 8
	var rounds []map[string]bool
	for range 4 {
		rounds = append(rounds, parallelShims(t, b, parallel))
	}
	// Round 0 may have run one under the shim started ahead at New.
	for round := 2; round < len(rounds); round++ {
		for pid := range rounds[round] {
			if !rounds[round-1][pid] {
				t.Errorf("round %d ran under shim %s, not one of round %d's %v", round, pid, round-1, rounds[round-1])
			}
		}
	}
}

// TestPooledShimsTrimmed: idle for the trim delay, the pool keeps four.
func TestPooledShimsTrimmed(t *testing.T) {
	defer native.SetTrimAfter(200 * time.Millisecond)()
	b := open(t, pooled)
	first := parallelShims(t, b, 8)
	deadline := time.Now().Add(10 * time.Second)
	for {
		kept := 0
		for pid := range first {
			if n, _ := strconv.Atoi(pid); testenv.Alive(n) {
				kept++
			}
		}
		if kept == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 8 idle shims alive 10 s after the batch, want 4 (trimmed after 200ms)", kept)
		}
		time.Sleep(50 * time.Millisecond)
	}
	again := parallelShims(t, b, 8)
	reused := 0
	for pid := range again {
		if first[pid] {
			reused++
		}
	}
	if reused != 4 {
		t.Fatalf("the next batch reused %d shims, want the 4 kept", reused)
	}
}

// TestPooledShimStoppedByItsCommand: a command that stops its own shim
// (SIGSTOP to its parent) cannot outlive its timeout: the shim cannot
// sweep, so the group kill that follows reaches the command's own group,
// not only the shim's.
func TestPooledShimStoppedByItsCommand(t *testing.T) {
	b := open(t, pooled)
	// The pid goes to a file: output still in the stopped shim's pipe is
	// lost. The call is cancelled once the command has stopped its shim
	// (the readiness marker: the file written, the parent in state T), so
	// a slow start under load cannot end it earlier.
	pidFile := filepath.Join(b.Info().WorkDir, "pid")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ready := make(chan int, 1)
	go func() {
		defer cancel()
		for ctx.Err() == nil {
			data, _ := os.ReadFile(pidFile)
			if p, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && strings.HasSuffix(string(data), "\n") && stopped(parentOf(p)) {
				ready <- p
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		ready <- 0
	}()
	err := b.Run(ctx, &ops.Cmd{Command: "echo $$ > pid; kill -STOP $PPID; sleep 30", Timeout: time.Minute})
	cancel()
	pid := <-ready
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v, want it cancelled", err)
	}
	if pid == 0 {
		t.Fatalf("the call ended before its command stopped its shim")
	}
	deadline := time.Now().Add(5 * time.Second)
	for testenv.Alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the command's shell (pid %d) outlived the call", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, out := shimOf(t, b, "echo ok"); out != "ok\n" {
		t.Fatalf("the next command: %q", out)
	}
}

// parentOf returns pid's parent (0 when it cannot be read).
func parentOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	p, _ := strconv.Atoi(f[1])
	return p
}

// stopped reports whether pid is in state T (stopped).
func stopped(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'T'
}
