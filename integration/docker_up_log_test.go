package integration

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// stopDaemonIn stops container id's helper daemon as the sandbox user and
// runs then (a shell command in the daemon's directory $d).
func stopDaemonIn(t *testing.T, id, then string) {
	t.Helper()
	_, bin, dir := daemonInContainer(t, id)
	script := bin + " __shim relay --stop " + dir + " && d=" + dir + " && " + then
	if out, err := exec.Command("docker", "exec", "-u", "1000:1000", id, "sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", script, err, out)
	}
}

// TestDockerUpLogFIFORecovers: a FIFO at the daemon's log (the daemon
// gone) does not hang the next call: it starts a fresh daemon with a new
// regular log, within seconds.
func TestDockerUpLogFIFORecovers(t *testing.T) {
	id, _ := piUp(t, "up-log-fifo")
	mustBash(t, id, "echo warm")
	stopDaemonIn(t, id, `rm -f "$d/helper.log" && mkfifo "$d/helper.log"`)
	start := time.Now()
	if got := mustBash(t, id, "echo hi"); got != "hi\n" {
		t.Fatalf("bash: %q", got)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the call took %s", d)
	}
	_, _, dir := daemonInContainer(t, id)
	out, err := exec.Command("docker", "exec", id, "stat", "-c", "%F", dir+"/helper.log").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "regular") {
		t.Errorf("helper.log: %v: %s", err, out)
	}
}

// TestDockerUpHelperFailureIsError: when the relay cannot reach a daemon
// (here the daemon's directory is not private), the call fails with the
// reason instead of running on the exec-per-operation fallback.
func TestDockerUpHelperFailureIsError(t *testing.T) {
	id, _ := piUp(t, "up-helper-error")
	mustBash(t, id, "echo warm")
	stopDaemonIn(t, id, `chmod 755 "$d"`)
	out, errs, code := pi(t, "", "tool", "--backend", "docker", "--container", id, "bash", `{"command":"echo hi"}`)
	if code == 0 || !strings.Contains(errs+out, "want 0700") {
		t.Fatalf("bash with the daemon's directory open: code %d, out %q, err %s; want a failure naming the reason", code, out, errs)
	}
}
