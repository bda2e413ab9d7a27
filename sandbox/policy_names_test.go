package sandbox

import (
	"context"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops/local"
)

// TestDenyToolUnknownName: a tool name the sandbox does not have (a
// capitalised "Bash") is an error from the flag, the file and Open, naming
// the known tools; ToolNames are the sandbox's tools.
func TestDenyToolUnknownName(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var pol Policy
	pol.RegisterFlags(fs)
	err := fs.Parse([]string{"--deny-tool", "Bash"})
	if err == nil || !strings.Contains(err.Error(), `unknown tool "Bash"`) || !strings.Contains(err.Error(), "known: read, bash, edit, write, grep, find, ls") ||
		!strings.Contains(err.Error(), `did you mean "bash"?`) {
		t.Errorf("--deny-tool Bash: %v", err)
	}
	if _, err := ParsePolicy([]byte(`{"denyTools": ["write", "shell"]}`)); err == nil || !strings.Contains(err.Error(), `unknown tool "shell"`) {
		t.Errorf("denyTools shell: %v", err)
	}
	b, err := local.New(context.Background(), local.Config{WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenBackend(context.Background(), b, Config{Policy: Policy{DenyTools: []string{"Read"}}}); err == nil {
		t.Error("OpenBackend accepted denyTools Read")
	}
	sb, _, _ := openPolicy(t, Policy{DenyTools: []string{"bash"}})
	var names []string
	for _, tool := range sb.Tools() {
		names = append(names, tool.Name())
	}
	if !slices.Equal(names, ToolNames) {
		t.Errorf("sandbox tools %q, ToolNames %q", names, ToolNames)
	}
}

// TestRedactEnvSetValue: a redact.env name whose value env.set gives (--env
// NAME=VALUE) is redacted, as is its host value.
func TestRedactEnvSetValue(t *testing.T) {
	t.Setenv("PI_TEST_BOTH", "host-value-1234")
	_, l, _ := openPolicy(t, Policy{
		Env:    EnvPolicy{Set: map[string]string{"PI_TEST_SET_ONLY": "set-secret-77", "PI_TEST_BOTH": "set-value-5678"}},
		Redact: RedactPolicy{Env: []string{"PI_TEST_SET_ONLY", "PI_TEST_BOTH"}},
	})
	r := call(t, l, "bash", bashArgs(`echo "$PI_TEST_SET_ONLY $PI_TEST_BOTH host-value-1234"`))
	if got, want := text(r), "[REDACTED] [REDACTED] [REDACTED]\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestPolicyWarnings: a redact.env name with nothing to redact (unset, or
// too short) gets a warning; one set on the host or by env.set does not.
func TestPolicyWarnings(t *testing.T) {
	t.Setenv("PI_TEST_HOST_SECRET", "host-secret-1")
	t.Setenv("PI_TEST_TINY", "ab")
	p := Policy{
		Env:    EnvPolicy{Set: map[string]string{"PI_TEST_SET_SECRET": "set-secret-2"}},
		Redact: RedactPolicy{Env: []string{"PI_TEST_HOST_SECRET", "PI_TEST_SET_SECRET", "PI_TEST_NOT_SET", "PI_TEST_TINY", "PI_TEST_NOT_SET"}},
	}
	got := p.Warnings()
	want := []string{
		"redact env PI_TEST_NOT_SET: the variable is not set (not on the host, not by env.set / --env PI_TEST_NOT_SET=VALUE), so nothing is redacted for it",
		"redact env PI_TEST_TINY: its value is shorter than 4 bytes and is not redacted",
	}
	if !slices.Equal(got, want) {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if w := (Policy{}).Warnings(); len(w) != 0 {
		t.Errorf("empty policy: %q", w)
	}
}
