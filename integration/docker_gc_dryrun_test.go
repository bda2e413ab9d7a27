package integration

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/moby/moby/client"
)

// lsEntry is what the test reads of an `ls --json` entry.
type lsEntry struct {
	ID, Kind, State, Owner string
	Labels                 map[string]string
}

// TestDockerCLIUpLsGCDryRun: up prints the new id alone on stdout (and
// takes --memory 512m as a size); ls
// --json lists it with its owner and labels; gc --dry-run names a leaked
// sandbox (a killed one) and removes nothing.
func TestDockerCLIUpLsGCDryRun(t *testing.T) {
	cli := needImage(t, "pi-sandbox/busybox")
	t.Cleanup(func() { checkNoContainers(t, "pi-sandbox.test=gc-dry-run") })
	out, errs, code := pi(t, "", "up", "--image", "pi-sandbox/busybox", "--memory", "512m", "--label", runLabel+"="+runID, "--label", "pi-sandbox.test=gc-dry-run", "--label", "team=t1")
	if code != 0 || !regexp.MustCompile(`^[0-9a-f]{64}\n$`).MatchString(out) {
		t.Fatalf("up: exit %d, stdout %q (want the id alone), stderr %s", code, out, errs)
	}
	id := strings.TrimSpace(out)
	t.Cleanup(func() { pi(t, "", "down", id) })
	ins, err := cli.ContainerInspect(t.Context(), id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m := ins.Container.HostConfig.Memory; m != 512<<20 {
		t.Errorf("up --memory 512m: the container's memory limit is %d, want %d", m, 512<<20)
	}

	out, errs, code = pi(t, "", "ls", "--json")
	var rows []lsEntry
	if code != 0 || json.Unmarshal([]byte(out), &rows) != nil {
		t.Fatalf("ls --json: exit %d, stdout %q, stderr %s", code, out, errs)
	}
	i := slices.IndexFunc(rows, func(r lsEntry) bool { return r.ID == id })
	if i < 0 {
		t.Fatalf("ls --json does not list %s: %s", id[:12], out)
	}
	if r := rows[i]; r.Kind != "sandbox" || r.State != "running" || !strings.Contains(r.Owner, "@") || r.Labels["team"] != "t1" {
		t.Errorf("ls --json entry: %+v", r)
	}
	out, _, _ = pi(t, "", "ls")
	if !strings.Contains(out, "OWNER") || !regexp.MustCompile(id[:12]+`.*team=t1`).MatchString(out) {
		t.Errorf("ls table lacks the owner and labels:\n%s", out)
	}

	// A running up sandbox is not garbage; a killed one is, and a dry run
	// names it and leaves it.
	out, _, code = pi(t, "", "gc", "--dry-run")
	if code != 0 || strings.Contains(out, id) {
		t.Errorf("gc --dry-run lists a running sandbox: exit %d, stdout %q", code, out)
	}
	if _, err := cli.ContainerKill(t.Context(), id, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		t.Fatal(err)
	}
	out, errs, code = pi(t, "", "gc", "--dry-run")
	if code != 0 || !slices.Contains(strings.Split(out, "\n"), id) || !strings.Contains(errs, "dry run: nothing removed") {
		t.Errorf("gc --dry-run: exit %d, stdout %q (want %s among them), stderr %q", code, out, id[:12], errs)
	}
	if _, err := cli.ContainerInspect(t.Context(), id, client.ContainerInspectOptions{}); err != nil {
		t.Errorf("the sandbox is gone after gc --dry-run: %v", err)
	}
	out, _, _ = pi(t, "", "ls", "-q")
	if !strings.Contains(out, id) {
		t.Errorf("ls -q after gc --dry-run does not list %s", id[:12])
	}
}
