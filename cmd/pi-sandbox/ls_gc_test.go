package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

func TestLsJSONEmptyIsArray(t *testing.T) {
	var out bytes.Buffer
	if code := printLs(nil, lsJSON, "ID", 12, stdio{out: &out}); code != 0 || out.String() != "[]\n" {
		t.Errorf("no sandboxes: exit %d, stdout %q; want 0 and []", code, out.String())
	}
}

func TestLsJSONAndTable(t *testing.T) {
	created := time.Now().Add(-time.Minute)
	left := 90.0
	rows := []lsRow{
		{ID: "0123456789abcdef", Image: "pi-sandbox/debian", Kind: "sandbox", State: "running", Created: created,
			Owner: "alice@laptop", Labels: map[string]string{"team": "a", "job": "7"}, Remaining: &left},
		{ID: "fedcba9876543210", Image: "pi-sandbox/busybox", Kind: "ephemeral", State: "running", Created: created,
			Owner: "", Labels: map[string]string{}},
	}
	var out bytes.Buffer
	if code := printLs(rows, lsJSON, "ID", 12, stdio{out: &out}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if strings.Count(out.String(), "\n") != 1 {
		t.Errorf("--json is not one line: %q", out.String())
	}
	var got []map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || len(got) != 2 {
		t.Fatalf("--json: %v, %d entries: %s", err, len(got), out.String())
	}
	if got[0]["id"] != "0123456789abcdef" || got[0]["owner"] != "alice@laptop" || got[0]["labels"].(map[string]any)["team"] != "a" || got[1]["kind"] != "ephemeral" ||
		got[0]["remaining_seconds"] != 90.0 || got[1]["remaining_seconds"] != nil {
		t.Errorf("--json: %s", out.String())
	}

	out.Reset()
	printLs(rows, lsTable, "ID", 12, stdio{out: &out})
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "ID IMAGE KIND STATE CREATED REMAINING OWNER LABELS" {
		t.Fatalf("table:\n%s", out.String())
	}
	if f := strings.Fields(lines[1]); f[0] != "0123456789ab" || f[len(f)-3] != "1m30s" || f[len(f)-2] != "alice@laptop" || f[len(f)-1] != "job=7,team=a" {
		t.Errorf("row 1: %q", lines[1])
	}
	if f := strings.Fields(lines[2]); f[len(f)-3] != "-" || f[len(f)-2] != "-" || f[len(f)-1] != "-" {
		t.Errorf("row 2 (no owner, no labels): %q", lines[2])
	}
}

func TestOwnerAndUserLabels(t *testing.T) {
	l := map[string]string{docker.LabelManaged: "true", docker.LabelKind: "ephemeral", docker.LabelHost: "h1", docker.LabelPID: "42", "team": "a"}
	if o := owner(l, docker.LabelHost, docker.LabelPID); o != "h1:42" {
		t.Errorf("ephemeral owner %q, want h1:42", o)
	}
	if u := userLabels(l); len(u) != 1 || u["team"] != "a" {
		t.Errorf("userLabels = %v, want only team=a", u)
	}
	l[labelOwner] = "bob@h2"
	if o := owner(l, docker.LabelHost, docker.LabelPID); o != "bob@h2" {
		t.Errorf("owner %q, want the owner label", o)
	}
	if o := owner(map[string]string{}, docker.LabelHost, docker.LabelPID); o != "" {
		t.Errorf("no labels: owner %q", o)
	}
	if v := ownerValue(); !strings.Contains(v, "@") || strings.HasPrefix(v, "@") {
		t.Errorf("ownerValue() = %q, want USER@HOST", v)
	}
}

func TestLsGCUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"ls", "-q", "--json"}, "pi-sandbox ls: -q and --json exclude each other"},
		{[]string{"ls", "x"}, "pi-sandbox ls: takes no arguments"},
		{[]string{"gc", "x", "--dry-run"}, "pi-sandbox gc: takes no arguments"},
		{[]string{"gc", "--backend", "k8s", "--kill-runsc-orphans"}, "pi-sandbox gc: --kill-runsc-orphans is for the docker backend"},
	} {
		code, out, errs := run(t, c.args...)
		if code != 2 || out != "" || errs != c.want+"\nRun 'pi-sandbox "+c.args[0]+" -h' for usage\n" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", c.args, code, out, errs)
		}
	}
	_, out, _ := run(t, "gc", "-h")
	if !strings.Contains(out, "  -dry-run\n") {
		t.Errorf("gc -h lacks --dry-run:\n%s", out)
	}
	_, out, _ = run(t, "ls", "-h")
	if !strings.HasPrefix(out, "Usage: pi-sandbox ls [flags]\n") || !strings.Contains(out, "  -json\n") {
		t.Errorf("ls -h:\n%s", out)
	}
}
