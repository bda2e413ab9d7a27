package testenv

import (
	"bufio"
	"os/exec"
	"testing"
)

// HoldFlock holds an exclusive flock on path from another process (the
// flock(1) utility) until the test ends. It returns once the lock is held.
func HoldFlock(t testing.TB, path string) {
	t.Helper()
	if _, err := exec.LookPath("flock"); err != nil {
		SkipOrFail(t, "no flock(1): "+err.Error())
	}
	HoldCommand(t, exec.Command("flock", path, "sh", "-c", "echo held; exec sleep 600"))
}

// HoldCommand starts cmd, which says "held" on its first line of output
// once it holds what it holds, and waits for that line; the process is
// killed when the test ends.
func HoldCommand(t testing.TB, cmd *exec.Cmd) {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if line != "held\n" {
		t.Fatalf("%v: first line %q (%v)", cmd.Args, line, err)
	}
}
