package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/loop/looptest"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/sandbox/open"
	"github.com/pi-sandbox/pi-sandbox/tools"
)

// cli runs pi-sandbox in this process with stdin and returns what it wrote
// and its exit status.
func cli(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code = runMain(context.Background(), args, stdio{strings.NewReader(stdin), &o, &e})
	return o.String(), e.String(), code
}

// withTools makes the commands run on ts instead of a backend until the
// test ends.
func withTools(t *testing.T, ts ...loop.Tool) {
	t.Helper()
	saved := openSession
	openSession = func(context.Context, open.Config) (*session, error) {
		return &session{tools: ts, close: func() error { return nil }}, nil
	}
	t.Cleanup(func() { openSession = saved })
}

func TestToolList(t *testing.T) {
	for _, args := range [][]string{{"tool"}, {"tool", "--list"}} {
		out, errs, code := cli(t, "", args...)
		if code != 0 || errs != "" {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errs)
		}
		for _, s := range tools.Specs() {
			if !regexp.MustCompile(`(?m)^` + s.Name + ` +` + regexp.QuoteMeta(s.Summary) + `$`).MatchString(out) {
				t.Errorf("%v: no line for %s with its summary in\n%s", args, s.Name, out)
			}
			ps, _ := s.Params()
			for _, p := range ps {
				req := ""
				if p.Required {
					req = ` +required`
				}
				if !regexp.MustCompile(`(?m)^ +` + p.Name + ` +` + p.Type + req + ` *$`).MatchString(out) {
					t.Errorf("%v: no line for %s's argument %s %s", args, s.Name, p.Name, p.Type)
				}
			}
		}
	}
	if _, _, code := cli(t, "", "tool", "--list", "read"); code != 2 {
		t.Errorf("--list with a name: exit %d, want 2", code)
	}
}

func TestToolSchema(t *testing.T) {
	out, errs, code := cli(t, "", "tool", "--schema", "grep")
	grep, _ := tools.SpecByName("grep")
	if code != 0 || errs != "" || out != string(grep.Parameters)+"\n" {
		t.Fatalf("--schema grep: exit %d, stderr %q, stdout %s", code, errs, out)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil || v["type"] != "object" {
		t.Errorf("--schema grep is not a JSON Schema object: %v %v", err, v)
	}
	out, errs, code = cli(t, "", "tool", "--schema", "frobnicate")
	if code != 2 || out != "" || !strings.Contains(errs, `no tool "frobnicate"; the tools are read, bash, edit, write, grep, find, ls`) {
		t.Errorf("--schema frobnicate: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if _, _, code := cli(t, "", "tool", "--schema"); code != 2 {
		t.Errorf("--schema without a name: exit %d, want 2", code)
	}
}

// TestToolExitStatus runs real calls on the local backend.
func TestToolExitStatus(t *testing.T) {
	dir := t.TempDir()
	const falseJSON = `{"content":[{"type":"text","text":"(no output)\n\nCommand exited with code 1"}],"isError":true}` + "\n"
	for _, c := range []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"bash", `{"command":"false"}`}, 0, falseJSON, ""},
		{[]string{"--fail", "bash", `{"command":"false"}`}, 1, falseJSON, ""},
		{[]string{"--text", "bash", `{"command":"false"}`}, 0, "(no output)\n\nCommand exited with code 1\n", ""},
		{[]string{"--text", "--fail", "bash", `{"command":"echo hi; exit 3"}`}, 1, "hi\n\n\nCommand exited with code 3\n", ""},
		{[]string{"--text", "--fail", "bash", `{"command":"printf 'a\\nb'"}`}, 0, "a\nb\n", ""},
		{[]string{"--text", "bash", `{"command":"true"}`}, 0, "(no output)\n", ""},
		{[]string{"--text", "bash", `{"command":"printf 'a\\033[2J\\tb\\r\\n'"}`}, 0, "a\\x1b[2J\tb\\r\n", ""},
		{[]string{"--text", "--fail", "bash", `{"command":"sleep 5","timeout":0.1}`}, 1, "Command timed out after 0.1 seconds\n", ""},
		{[]string{"--text", "read", `{"path":"nope"}`}, 0, "ENOENT: no such file or directory, access '" + dir + "/nope'\n", ""},
		{[]string{"--text", "frobnicate", `{}`}, 0, "Tool frobnicate not found\n",
			"pi-sandbox tool: no tool \"frobnicate\"; the tools are read, bash, edit, write, grep, find, ls (pi-sandbox tool --list)\n"},
		{[]string{"--fail", "frobnicate", `{}`}, 1, `{"content":[{"type":"text","text":"Tool frobnicate not found"}],"details":{},"isError":true}` + "\n",
			"pi-sandbox tool: no tool \"frobnicate\"; the tools are read, bash, edit, write, grep, find, ls (pi-sandbox tool --list)\n"},
	} {
		args := append([]string{"tool", "--workdir", dir}, c.args...)
		out, errs, code := cli(t, "", args...)
		if code != c.code || out != c.out || errs != c.err {
			t.Errorf("%q:\n exit %d, want %d\n stdout %q\n want   %q\n stderr %q\n want   %q", c.args, code, c.code, out, c.out, errs, c.err)
		}
	}
}

// TestToolConfigRefused: a configuration the engine refuses exits 2 with
// the reason on stderr, whether opening the backend or the call meets it;
// a transport failure exits 1.
func TestToolConfigRefused(t *testing.T) {
	saved := openSession
	openSession = func(context.Context, open.Config) (*session, error) {
		return nil, fmt.Errorf("docker: image x is not on the engine: %w", ops.ErrConfig)
	}
	out, errs, code := cli(t, "", "tool", "bash", `{"command":"true"}`)
	openSession = saved
	if code != 2 || out != "" || !strings.Contains(errs, "image x is not on the engine") {
		t.Errorf("refused at open: exit %d, stdout %q, stderr %q", code, out, errs)
	}

	paused := looptest.Fail(fmt.Errorf("docker: container c is paused (docker unpause c): %w", ops.ErrConfig))
	paused.ToolName = "paused"
	lost := looptest.Fail(fmt.Errorf("ssh: connection lost: %w", ops.ErrTransport))
	lost.ToolName = "lost"
	withTools(t, paused, lost)
	for _, c := range []struct {
		name, err string
		code      int
	}{{"paused", "container c is paused", 2}, {"lost", "connection lost", 1}} {
		for _, flags := range [][]string{nil, {"--text"}, {"--fail"}} {
			args := append(append([]string{"tool"}, flags...), c.name, "{}")
			out, errs, code := cli(t, "", args...)
			if code != c.code || out != "" || !strings.Contains(errs, c.err) {
				t.Errorf("%q: exit %d (want %d), stdout %q, stderr %q", args, code, c.code, out, errs)
			}
		}
	}
}

func TestToolHelpStatesRules(t *testing.T) {
	out, errs, code := cli(t, "", "tool", "-h")
	help := out + errs
	if code != 0 {
		t.Fatalf("tool -h: exit %d", code)
	}
	for _, want := range []string{"--text", "--fail", "--schema", "--list", "Exit status:", "0  a result was produced", "1  no result", "2  usage error, or a configuration the engine refuses"} {
		if !strings.Contains(help, want) {
			t.Errorf("tool -h does not say %q", want)
		}
	}
}
