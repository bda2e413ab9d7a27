package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Hardening of an `up` sandbox's helper against its own commands: a
// command that lowers the limits of its shim or of the daemon, and one
// that kills its shim to leave a setsid process behind.

// piUpDebian is piUp on pi-sandbox/debian (prlimit and bash are there).
func piUpDebian(t *testing.T, purpose string) string {
	t.Helper()
	needImage(t, "pi-sandbox/debian")
	t.Cleanup(func() { checkNoContainers(t, "pi-sandbox.test="+purpose) })
	out, errs, code := pi(t, "", "up", "--image", "pi-sandbox/debian", "--label", runLabel+"="+runID, "--label", "pi-sandbox.test="+purpose)
	id := strings.TrimSpace(out)
	if code != 0 || len(id) != 64 {
		t.Fatalf("up: code %d, out %q, err %s", code, out, errs)
	}
	t.Cleanup(func() { pi(t, "", "down", id) })
	return id
}

// bashTimeout is bashIn with a timeout in seconds.
func bashTimeout(t *testing.T, id, command string, timeout int) string {
	t.Helper()
	in, _ := json.Marshal(map[string]any{"command": command, "timeout": timeout})
	out, errs, code := pi(t, "", "tool", "--backend", "docker", "--container", id, "bash", string(in))
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Content) == 0 {
		t.Fatalf("bash %q: code %d, out %q, err %s", command, code, out, errs)
	}
	return res.Content[0].Text
}

const writes10KIn = "head -c 10240 /dev/zero > /tmp/big && wc -c < /tmp/big"

// TestDockerUpLimitsChangedReplaced: a command that lowers its shim's
// limits, then one that lowers the daemon's, is told so; each next CLI
// call writes what RLIMIT_FSIZE=1000 refused, the one after the daemon's
// change under a fresh daemon that says it was restarted.
func TestDockerUpLimitsChangedReplaced(t *testing.T) {
	id := piUpDebian(t, "up-limits")
	if text := bashTimeout(t, id, "prlimit --pid $PPID --fsize=1000", 30); !strings.Contains(text, "changed the resource limits of the process that started it (RLIMIT_FSIZE 1000/1000") {
		t.Errorf("the shim's limits: the call says %q", text)
	}
	if text := mustBash(t, id, writes10KIn); text != "10240\n" {
		t.Fatalf("the call after the shim's limits changed: %q", text)
	}
	// The pooled shim's parent is the daemon.
	text := bashTimeout(t, id, "prlimit --pid $(cut -d' ' -f4 /proc/$PPID/stat) --fsize=1000", 30)
	if !strings.Contains(text, "changed the resource limits of the helper daemon (RLIMIT_FSIZE 1000/1000") {
		t.Errorf("the daemon's limits: the call says %q", text)
	}
	text = mustBash(t, id, writes10KIn)
	if !strings.HasPrefix(text, "10240\n") || !strings.Contains(text, "the helper daemon was restarted") {
		t.Fatalf("the call after the daemon's limits changed: %q, want 10240 and the restart note", text)
	}
	if text := mustBash(t, id, writes10KIn); text != "10240\n" {
		t.Fatalf("a later call: %q", text)
	}
}

// TestDockerUpKilledShimLeavesNothing: `kill -9 $PPID` with a setsid
// child, after setsid ran or racing with it, under a timeout: nothing is
// left running in the container.
func TestDockerUpKilledShimLeavesNothing(t *testing.T) {
	id := piUpDebian(t, "up-orphans")
	const trials = 10
	marker := fmt.Sprintf("sleep 31%d", time.Now().UnixNano()%1000)
	for i := range trials {
		command := "setsid " + marker + "1 & sleep 0.3; kill -9 $PPID; sleep 30"
		if i%2 == 1 {
			command = "kill -9 $PPID; setsid " + marker + "2 & sleep 5"
		}
		bashTimeout(t, id, command, 2)
	}
	deadline := time.Now().Add(5 * time.Second)
	for hostCount(t, marker) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d setsid children of %d trials left running", hostCount(t, marker), trials)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
