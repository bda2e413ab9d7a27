package integration

import (
	"strings"
	"testing"

	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

// TestDockerUpMaxSavedOutput: `up --max-saved-output` is recorded on the
// container and bounds every later call's saved outputs in all: the call
// that reaches it keeps a cut file and says "incomplete", the next keeps
// none and says why.
func TestDockerUpMaxSavedOutput(t *testing.T) {
	cli := needImage(t, "pi-sandbox/busybox")
	const purpose = "up-saved"
	t.Cleanup(func() { checkNoContainers(t, "pi-sandbox.test="+purpose) })
	out, errs, code := pi(t, "", "up", "--image", "pi-sandbox/busybox", "--max-saved-output", "1m", "--label", runLabel+"="+runID, "--label", "pi-sandbox.test="+purpose)
	id := strings.TrimSpace(out)
	if code != 0 || len(id) != 64 {
		t.Fatalf("up: code %d, out %q, err %s", code, out, errs)
	}
	t.Cleanup(func() { pi(t, "", "down", id) })
	ins, err := cli.ContainerInspect(t.Context(), id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ins.Container.Config.Labels[docker.LabelMaxSavedOutput]; got != "1048576" {
		t.Errorf("label %s = %q, want 1048576", docker.LabelMaxSavedOutput, got)
	}
	const big = "yes 0123456789 | head -c 1500000"
	text, _ := bashIn(t, id, big)
	if !strings.Contains(text, "(incomplete: the sandbox's saved outputs reached their total of 1 MiB") {
		t.Errorf("the call that reaches the total: %q", text[strings.LastIndex(text, "\n["):])
	}
	// The file the first call saved: 1 MiB and the note.
	size := mustBash(t, id, `find /var/lib/pi-sandbox /var/tmp /tmp -name 'pi-bash-*.log' 2>/dev/null | xargs wc -c`)
	if n := atoi(strings.Fields(size + " x")[0]); n < 1<<20 || n > 1<<20+300 {
		t.Errorf("saved files: %q, want one of 1 MiB and the note", size)
	}
	text, _ = bashIn(t, id, big)
	if !strings.Contains(text, "Full output: not saved (the sandbox's saved outputs reached their total of 1 MiB") {
		t.Errorf("the call after the total: %q", text[strings.LastIndex(text, "\n["):])
	}
}
