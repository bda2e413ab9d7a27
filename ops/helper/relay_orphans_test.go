//go:build linux

package helper_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// TestRelayKilledShimLeavesNothing: a command that kills its shim (kill -9
// $PPID) and leaves a process in a session of its own (setsid) leaves
// nothing running, whether setsid ran before the kill or races with it:
// the daemon adopts what the dead shim's tree left and kills it. Nothing
// is listed as background either.
func TestRelayKilledShimLeavesNothing(t *testing.T) {
	exe, dir := testExe(t), daemonDir(t)
	c := relayClient(t, exe, dir, 0)
	work := t.TempDir()
	const trials = 10
	var pidFiles []string
	for i := range trials {
		f := filepath.Join(work, fmt.Sprintf("pid%d", i))
		pidFiles = append(pidFiles, f)
		// The even trials kill the shim once setsid has run (the child
		// wrote its pid); the odd ones race with it, as a command would.
		// The pid file appears whole (a rename) or not at all: a child
		// killed between creating and writing it leaves no empty file.
		command := fmt.Sprintf("setsid sh -c 'echo $$ > %s.tmp && mv %s.tmp %s; exec sleep 300' & while [ ! -s %s ]; do sleep 0.01; done; kill -9 $PPID; sleep 30", f, f, f, f)
		if i%2 == 1 {
			command = fmt.Sprintf("kill -9 $PPID; setsid sh -c 'echo $$ > %s.tmp && mv %s.tmp %s; exec sleep 300' & sleep 30", f, f, f)
		}
		err := c.Run(t.Context(), &ops.Cmd{Command: command, Timeout: 5 * time.Second})
		var ee *ops.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("trial %d: %v, want the shim's death (exit 137)", i, err)
		}
	}
	var left []int
	for _, f := range pidFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			continue // killed before it wrote
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			t.Fatalf("%s: %q", f, data)
		}
		left = append(left, pid)
	}
	if len(left) < trials/2 {
		t.Fatalf("only %d of %d trials started their setsid child", len(left), trials)
	}
	waitDead(t, left, 5*time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if ps, err := c.Processes(ctx); err != nil || len(ps) != 0 {
		t.Fatalf("background processes %+v, %v: want none", ps, err)
	}
}
