package shim_test

import (
	"bufio"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// TestKillStopsTreeFirst: a kill request must not let the shell run the
// next command once its foreground child dies (`sleep; echo after`): the
// sweep stops every process before it kills any, as pi's killProcessTree
// does with SIGSTOP on macOS and the group SIGKILL does atomically on Linux.
// The order of the sweep is random, so the test repeats.
func TestKillStopsTreeFirst(t *testing.T) {
	for i := range 30 {
		pidfile := filepath.Join(t.TempDir(), "shim.pid")
		script := "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do sleep 300 & done; echo ready; sleep 300; echo after"
		cmd := shimCmd(t, "run", "--pidfile", pidfile, "--", "/bin/sh", "-c", script)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(stdout)
		if line, err := r.ReadString('\n'); err != nil || line != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("first line %q, %v", line, err)
		}
		if out, err := shimCmd(t, "kill", pidfile).CombinedOutput(); err != nil {
			t.Errorf("__shim kill: %v: %s", err, out)
		}
		rest, _ := io.ReadAll(r)
		cmd.Wait()
		if strings.Contains(string(rest), "after") {
			t.Fatalf("trial %d: the shell ran the next command during the kill: %q", i, rest)
		}
	}
}
