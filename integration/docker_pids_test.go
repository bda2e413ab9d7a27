package integration

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// pidsFile is the container's pids.current on the host, "" where none is
// found.
func pidsFile(id string) string {
	for _, pat := range []string{"/sys/fs/cgroup/pids/docker/%s*/pids.current", "/sys/fs/cgroup/pids/*/docker-%s*/pids.current", "/sys/fs/cgroup/docker/%s*/pids.current", "/sys/fs/cgroup/system.slice/docker-%s*/pids.current"} {
		if m, _ := filepath.Glob(fmt.Sprintf(pat, id)); len(m) == 1 {
			return m[0]
		}
	}
	return ""
}

// pidsCurrent reads a pids.current file (-1 for none).
func pidsCurrent(t *testing.T, file string) int {
	t.Helper()
	if file == "" {
		return -1
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return n
}

// waitPids waits until the count in file is at most max: a killed process
// holds its pid until its parent reaps it.
func waitPids(t *testing.T, file string, max int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for n := pidsCurrent(t, file); n > max; n = pidsCurrent(t, file) {
		if time.Now().After(deadline) {
			t.Fatalf("%s = %d after 10 s, want at most %d", file, n, max)
		}
		time.Sleep(20 * time.Millisecond)
	}
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
	// failed fork), then free pids from the host.
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
	// Free pids one at a time from two on: runc's exec needs a few for a
	// moment (nsexec clones twice) and fails on its own with fewer ("OCI
	// runtime exec failed": the command never started, so the next count
	// is tried); with enough for it, its shell keeps one and the wrapper's
	// forks find too few. How many runc needs differs between versions, so
	// the count is found, not assumed.
	file := pidsFile(id)
	if file == "" {
		t.Logf("no pids cgroup file for %s on the host: no wait for the reaping of a killed sleep", id)
	}
	full := pidsCurrent(t, file)
	var tried []string
	for k := range pids {
		if k >= 8 {
			break
		}
		if err := syscall.Kill(pids[k], syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if k == 0 {
			continue
		}
		waitPids(t, file, full-k-1)
		var out strings.Builder
		err := b.Run(t.Context(), &ops.Cmd{Command: "echo hi; sleep 1 & wait", Output: &out})
		var se *ops.StartError
		if errors.As(err, &se) && errors.Is(err, ops.ErrProcessLimit) {
			t.Logf("%d killed: %v; before: %q", k+1, err, tried)
			return
		}
		tried = append(tried, fmt.Sprintf("%d killed (pids.current %d): %v (%T), output %q", k+1, pidsCurrent(t, file), err, err, out.String()))
		if err == nil || !strings.Contains(out.String(), "OCI runtime exec failed") {
			break
		}
	}
	t.Fatalf("Run at the pids limit never gave a StartError wrapping ops.ErrProcessLimit:\n%s", strings.Join(tried, "\n"))
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
