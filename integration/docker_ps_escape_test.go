package integration

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDockerPSEscapesControls: a background process whose argv carries
// terminal escape sequences (a title change, a screen clear) is listed by
// `ps` with them escaped, never raw; `ps --json` keeps them in its JSON
// escapes, so a reader decodes the argv unchanged.
func TestDockerPSEscapesControls(t *testing.T) {
	id, _ := piUp(t, "ps-escape")
	marker := "esc-" + runID
	text, isErr := bashIn(t, id, `sh -c 'while :; do sleep 1; done' `+marker+` "$(printf '\033]0;pwned\007')" "$(printf '\033[2J\302\233')" >/dev/null 2>&1 & echo started`)
	if isErr || text != "started\n" {
		t.Fatalf("start the process: %q (error %v)", text, isErr)
	}
	out, errs, code := pi(t, "", "ps", "--backend", "docker", "--container", id)
	if code != 0 || !strings.Contains(out, marker) {
		t.Fatalf("ps: code %d, out %q, err %s", code, out, errs)
	}
	if strings.ContainsAny(out, "\x1b\x07\u009b") {
		t.Errorf("ps wrote raw control characters: %q", out)
	}
	if !strings.Contains(out, `\x1b]0;pwned\x07 \x1b[2J\u009b`) {
		t.Errorf("ps: %q, want the escape sequences shown escaped", out)
	}

	out, errs, code = pi(t, "", "ps", "--backend", "docker", "--container", id, "--json")
	if code != 0 || strings.ContainsAny(out, "\x1b\x07\u009b") {
		t.Fatalf("ps --json: code %d, out %q, err %s", code, out, errs)
	}
	found := false
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var row struct{ Command string }
		if err := json.Unmarshal([]byte(l), &row); err != nil {
			t.Fatalf("ps --json line %q: %v", l, err)
		}
		found = found || strings.Contains(row.Command, marker+" \x1b]0;pwned\x07 \x1b[2J\u009b")
	}
	if !found {
		t.Errorf("ps --json: no command with the argv unchanged in %q", out)
	}
}
