package integration

import (
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

// sleeperPIDs returns the host pids of the container's filler sleeps.
func sleeperPIDs(t *testing.T, id string) []int {
	t.Helper()
	out, err := exec.Command("docker", "top", id, "-eo", "pid,args").CombinedOutput()
	if err != nil {
		t.Fatalf("docker top: %v: %s", err, out)
	}
	var pids []int
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) == 3 && f[1] == "sleep" && f[2] == "999" {
			if n, err := strconv.Atoi(f[0]); err == nil {
				pids = append(pids, n)
			}
		}
	}
	return pids
}

// TestDockerProcessLimitStartError (17.13): when the container's pids limit
// leaves no process for the command, Run says "could not fork: process
// limit reached" (a *ops.StartError wrapping ops.ErrProcessLimit) instead of
// "(no output) … code 254". Without the helper the exec's own shell takes
// one of the last free pids and its wrapper cannot fork enough.
func TestDockerProcessLimitStartError(t *testing.T) {
	needImage(t, "pi-sandbox/busybox")
	id := upContainerConfig(t, docker.Config{Image: "pi-sandbox/busybox", PidsLimit: 40}, "pids")
	b := newBackend(t, docker.Config{Container: id, NoHelper: true})
	// Fill the limit with sleeps (the filler's shell stops at its first
	// failed fork), then free one pid from the host.
	exec.Command("docker", "exec", "-d", id, "sh", "-c", "while :; do sleep 999 & done").Run()
	deadline := time.Now().Add(30 * time.Second)
	n := 0
	for time.Now().Before(deadline) {
		if m := len(sleeperPIDs(t, id)); m > 0 && m == n {
			break
		} else {
			n = m
		}
		time.Sleep(300 * time.Millisecond)
	}
	pids := sleeperPIDs(t, id)
	if len(pids) < 10 {
		t.Fatalf("only %d sleeps filled the limit", len(pids))
	}
	// Three: runc's exec needs them for a moment (nsexec clones twice),
	// then its shell keeps one and the wrapper's forks find too few.
	for _, p := range pids[:3] {
		if err := syscall.Kill(p, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	err := b.Run(t.Context(), &ops.Cmd{Command: "echo hi; sleep 1 & wait"})
	var se *ops.StartError
	if !errors.As(err, &se) || !errors.Is(err, ops.ErrProcessLimit) {
		t.Fatalf("Run at the pids limit = %v (%T), want a StartError wrapping ops.ErrProcessLimit", err, err)
	}
}

// TestDockerOOMNoteSurvivingShell (17.13): a process of the command is
// killed by the OOM killer while the shell goes on and exits 0; the output
// used to say nothing of it. The cgroup's oom_kill counter (before and
// after) adds a note, with the helper (which reads it in the container)
// and without (a probe around the command).
func TestDockerOOMNoteSurvivingShell(t *testing.T) {
	needImage(t, "pi-sandbox/busybox")
	id := upContainerConfig(t, docker.Config{Image: "pi-sandbox/busybox", Memory: 64 << 20}, "oom")
	for _, noHelper := range []bool{false, true} {
		t.Run(map[bool]string{false: "helper", true: "nohelper"}[noHelper], func(t *testing.T) {
			b := newBackend(t, docker.Config{Container: id, NoHelper: noHelper})
			if strings.Contains(strings.Join(b.Info().Limits, "\n"), "no cgroup oom_kill counter") {
				skipOrFail(t, "no cgroup oom_kill counter in the container")
			}
			if !noHelper && !b.Info().Has("helper") {
				skipOrFail(t, "no helper: "+strings.Join(b.Info().Limits, "; "))
			}
			var out strings.Builder
			err := b.Run(t.Context(), &ops.Cmd{Command: `(s=$(head -c 400000000 /dev/zero | tr '\0' a); echo ${#s}); echo survived`, Output: &out})
			if err != nil {
				t.Fatalf("Run = %v (output %q)", err, out.String())
			}
			if !strings.Contains(out.String(), "survived") || !strings.HasSuffix(out.String(), ops.OOMNote) {
				t.Fatalf("output %q: want the shell's last line and the out-of-memory note at the end", out.String())
			}
			// A command that needs no more memory than it has gets no note.
			out.Reset()
			if err := b.Run(t.Context(), &ops.Cmd{Command: "echo fine", Output: &out}); err != nil || out.String() != "fine\n" {
				t.Fatalf("Run(echo fine) = %v, %q", err, out.String())
			}
		})
	}
}
