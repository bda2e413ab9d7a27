//go:build linux

package native

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestFreezeStopsTheTreeAndResumesIt: every descendant (a grandchild in
// its own session too) is stopped, then resumed; one that was stopped
// before stays stopped.
func TestFreezeStopsTheTreeAndResumesIt(t *testing.T) {
	cmd := exec.Command("sh", "-c", "setsid sleep 300 & sleep 300 & echo ready; wait")
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Process.Kill(); cmd.Wait() }()
	buf := make([]byte, 6)
	if _, err := out.Read(buf); err != nil || string(buf) != "ready\n" {
		t.Fatalf("readiness: %q %v", buf, err)
	}
	var kids []int
	for deadline := time.Now().Add(10 * time.Second); len(kids) < 2 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		kids = descendants(cmd.Process.Pid)
	}
	if len(kids) != 2 {
		t.Fatalf("the shell's children: %v", kids)
	}
	syscall.Kill(kids[0], syscall.SIGSTOP) // stopped before: stays so
	waitState(t, kids[0], 'T')
	n, thaw := Freeze()
	if n < 2 { // the shell and the other sleep (and whatever else this test process runs)
		thaw()
		t.Fatalf("froze %d processes", n)
	}
	for _, pid := range []int{cmd.Process.Pid, kids[1]} {
		waitState(t, pid, 'T')
	}
	thaw()
	for _, pid := range []int{cmd.Process.Pid, kids[1]} {
		waitState(t, pid, 'S')
	}
	if st, _ := procState(kids[0]); st != 'T' {
		t.Fatalf("the process stopped before the freeze is %c after it", st)
	}
}

func waitState(t *testing.T, pid int, want byte) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if st, _ := procState(pid); st == want || (want == 'S' && st == 'R') {
			return
		}
	}
	st, _ := procState(pid)
	t.Fatalf("process %d is in state %c, want %c", pid, st, want)
}
