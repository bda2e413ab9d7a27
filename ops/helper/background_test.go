package helper_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/helper"
)

// TestBackgroundWriterLivesAcrossCalls: a process a command leaves running
// keeps running, owned by the helper, across later calls of the session;
// closing the session kills it.
func TestBackgroundWriterLivesAcrossCalls(t *testing.T) {
	b := open(t).(*helper.Client)
	if !b.Info().Has("background") {
		t.Fatalf("no background capability: %v", b.Info())
	}
	dir := t.TempDir()
	f := filepath.Join(dir, "ticks")
	start := time.Now()
	out := runOut(t, b, fmt.Sprintf("(while :; do echo tick >> %s; sleep 0.05; done) & echo $! > %s/pids; echo started", f, dir))
	if out != "started\n" {
		t.Fatalf("output %q", out)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the call took %s with a background writer", d)
	}
	last := 0
	for i := range 3 {
		time.Sleep(200 * time.Millisecond)
		n, _ := strconv.Atoi(strings.TrimSpace(runOut(t, b, "wc -l < "+f)))
		if n <= last {
			t.Fatalf("call %d: the writer stopped (%d lines, was %d)", i, n, last)
		}
		last = n
	}
	ps, err := b.Processes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := pids(t, dir)[0]
	found := false
	for _, p := range ps {
		found = found || p.PID == want
	}
	if !found {
		t.Errorf("Processes = %+v, lacks the writer %d", ps, want)
	}
	b.Close()
	waitDead(t, []int{want}, 3*time.Second)
}

// TestBackgroundTimeoutKillsAll: a call that times out still kills its
// whole tree, background children and setsid escapees included.
func TestBackgroundTimeoutKillsAll(t *testing.T) {
	b := open(t)
	dir := t.TempDir()
	f := filepath.Join(dir, "pids")
	err := b.Run(t.Context(), &ops.Cmd{Command: fmt.Sprintf("sleep 300 & echo $! >> %[1]s; setsid sleep 300 & echo $! >> %[1]s; sleep 300", f), Timeout: time.Second})
	var te *ops.TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("Run = %v, want a timeout", err)
	}
	waitDead(t, pids(t, dir), 3*time.Second)
	if ps, _ := b.(ops.ProcessLister).Processes(t.Context()); len(ps) != 0 {
		t.Errorf("Processes after the timeout = %+v, want none", ps)
	}
}

// TestBackgroundLimit: the call that would exceed the limit of background
// process groups gets an error saying so, and its leftovers die.
func TestBackgroundLimit(t *testing.T) {
	b := openWith(t, 2)
	dir := t.TempDir()
	for i := range 2 {
		runOut(t, b, fmt.Sprintf("sleep 300 & echo $! >> %s/pids; echo %d", dir, i))
	}
	err := b.Run(t.Context(), &ops.Cmd{Command: fmt.Sprintf("sleep 300 & echo $! > %s/third", dir)})
	if !errors.Is(err, ops.ErrBackgroundLimit) || !strings.Contains(err.Error(), "kill") {
		t.Fatalf("third Run = %v, want ops.ErrBackgroundLimit saying how to stop one", err)
	}
	third, _ := strconv.Atoi(strings.TrimSpace(runOut(t, b, "cat "+dir+"/third")))
	waitDead(t, []int{third}, 3*time.Second)
	for _, p := range pids(t, dir) {
		if !testenv.Alive(p) {
			t.Errorf("background process %d of an earlier call died", p)
		}
	}
}

func runOut(t *testing.T, b ops.Backend, command string) string {
	t.Helper()
	var out strings.Builder
	if err := b.Run(t.Context(), &ops.Cmd{Command: command, Output: &out}); err != nil {
		t.Fatalf("Run(%q): %v", command, err)
	}
	return out.String()
}
