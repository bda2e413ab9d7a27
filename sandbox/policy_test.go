package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/local"
)

// openPolicy opens a local sandbox in a fresh directory with p.
func openPolicy(t *testing.T, p Policy) (*Sandbox, *loop.Loop, string) {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := local.New(ctx, local.Config{WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := OpenBackend(ctx, b, Config{Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sb.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	l, err := sb.NewLoop()
	if err != nil {
		t.Fatal(err)
	}
	return sb, l, dir
}

func call(t *testing.T, l *loop.Loop, name, args string) *loop.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b := l.RunBatch(ctx, nil, []loop.ToolCall{{ID: "c1", Name: name, Arguments: json.RawMessage(args)}}, nil)
	return b.Results[0].Result
}

func text(r *loop.Result) string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

func bashArgs(cmd string) string {
	b, _ := json.Marshal(map[string]string{"command": cmd})
	return string(b)
}

func TestCommandRules(t *testing.T) {
	deny := []Rule{{Prefix: "rm -rf"}, {Regex: `\bcurl\b`, Reason: "no network tools"}, {Prefix: "shutdown"}}
	allow := []Rule{{Prefix: "echo"}, {Prefix: "git status"}, {Regex: `^ls( |$)`}, {Prefix: "rm -rf"}}
	cases := []struct {
		name    string
		rules   CommandRules
		line    string
		blocked string // "" = allowed; else a substring of the reason
	}{
		{"deny prefix", CommandRules{Deny: deny}, "rm -rf /tmp/x", `deny prefix "rm -rf"`},
		{"deny prefix word boundary", CommandRules{Deny: []Rule{{Prefix: "rm"}}}, "rmdir x", ""},
		{"deny prefix exact", CommandRules{Deny: []Rule{{Prefix: "rm"}}}, "rm", `deny prefix "rm"`},
		{"deny after semicolon", CommandRules{Deny: deny}, "echo hi; rm -rf x", `deny prefix "rm -rf"`},
		{"deny after &&", CommandRules{Deny: deny}, "true && rm -rf x", "rm -rf"},
		{"deny in pipe", CommandRules{Deny: deny}, "cat x | shutdown now", "shutdown"},
		{"deny in substitution", CommandRules{Deny: deny}, "echo $(rm -rf x)", "rm -rf"},
		{"deny in backquotes", CommandRules{Deny: deny}, "echo `rm -rf x`", "rm -rf"},
		{"deny after newline", CommandRules{Deny: deny}, "echo a\nrm -rf x", "rm -rf"},
		{"deny in braces", CommandRules{Deny: deny}, "{ rm -rf x; }", "rm -rf"},
		{"deny after if", CommandRules{Deny: deny}, "if true; then rm -rf x; fi", "rm -rf"},
		{"deny through sudo", CommandRules{Deny: deny}, "sudo -E rm -rf x", "rm -rf"},
		{"deny through env assignment", CommandRules{Deny: deny}, "FOO=1 rm -rf x", "rm -rf"},
		{"deny through absolute path", CommandRules{Deny: deny}, "/bin/rm -rf x", "rm -rf"},
		{"deny through timeout", CommandRules{Deny: deny}, "timeout 5 rm -rf x", "rm -rf"},
		{"deny through bash -c", CommandRules{Deny: deny}, `bash -c "rm -rf x"`, "rm -rf"},
		{"deny through eval", CommandRules{Deny: deny}, `eval 'rm -rf x'`, "rm -rf"},
		{"deny through backslash", CommandRules{Deny: deny}, `r\m -rf x`, "rm -rf"},
		{"deny through quoted name", CommandRules{Deny: deny}, `"rm" -rf x`, "rm -rf"},
		{"deny after many wrappers", CommandRules{Deny: deny}, strings.Repeat("sudo ", 20000) + "rm -rf x", "rm -rf"},
		{"deny regex after many wrappers", CommandRules{Deny: []Rule{{Regex: "^shutdown"}}}, strings.Repeat("nohup ", 20000) + "shutdown", "shutdown"},
		{"allow does not unquote", CommandRules{Allow: allow}, `"echo" hi`, "matches no allow rule"},
		{"deny regex custom reason", CommandRules{Deny: deny}, "x=$(curl http://e)", "no network tools"},
		{"deny regex whole line", CommandRules{Deny: []Rule{{Regex: `a;b`}}}, "echo a;b", `deny regex "a;b"`},
		{"not denied", CommandRules{Deny: deny}, "echo rm -rf", ""},
		{"allow prefix", CommandRules{Allow: allow}, "echo hi", ""},
		{"allow every segment", CommandRules{Allow: allow}, "echo hi && git status", ""},
		{"allow regex", CommandRules{Allow: allow}, "ls -la", ""},
		{"allow misses one segment", CommandRules{Allow: allow}, "echo hi; cat /etc/passwd", `"cat /etc/passwd" matches no allow rule`},
		{"allow no match", CommandRules{Allow: allow}, "git push", "matches no allow rule"},
		{"allow sudo not implied", CommandRules{Allow: allow}, "sudo echo hi", "matches no allow rule"},
		{"deny beats allow", CommandRules{Allow: allow, Deny: deny}, "rm -rf x", "deny prefix"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cp, err := compileCommands(c.rules)
			if err != nil {
				t.Fatal(err)
			}
			got := cp.check(c.line)
			switch {
			case c.blocked == "" && got != "":
				t.Errorf("%q blocked: %s", c.line, got)
			case c.blocked != "" && !strings.Contains(got, c.blocked):
				t.Errorf("%q: reason %q, want it to contain %q", c.line, got, c.blocked)
			case c.blocked != "" && !strings.HasPrefix(got, BlockedPrefix):
				t.Errorf("%q: reason %q lacks %q", c.line, got, BlockedPrefix)
			}
		})
	}
}

func TestPolicyBlocksThroughLoop(t *testing.T) {
	_, l, dir := openPolicy(t, Policy{
		Commands:  CommandRules{Deny: []Rule{{Prefix: "touch"}}},
		DenyTools: []string{"write"},
	})
	r := call(t, l, "bash", bashArgs("echo ok && touch "+filepath.Join(dir, "made")))
	if !r.IsError || text(r) != `Command blocked by policy: deny prefix "touch"` {
		t.Fatalf("got %+v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "made")); !os.IsNotExist(err) {
		t.Fatalf("blocked command ran: %v", err)
	}
	r = call(t, l, "write", `{"path":"a.txt","content":"x"}`)
	if !r.IsError || text(r) != "Tool write is blocked by policy" {
		t.Fatalf("write: %+v", r)
	}
	r = call(t, l, "bash", bashArgs("echo fine"))
	if r.IsError || !strings.Contains(text(r), "fine") {
		t.Fatalf("allowed command: %+v", r)
	}
}

func TestRedaction(t *testing.T) {
	t.Setenv("PI_TEST_SECRET", "s3cr3t-value-42")
	t.Setenv("PI_TEST_SHORT", "ab")
	_, l, dir := openPolicy(t, Policy{Redact: RedactPolicy{
		Env:      []string{"PI_TEST_SECRET", "PI_TEST_SHORT", "PI_TEST_UNSET"},
		Patterns: []string{`ghp_[A-Za-z0-9]{8}`},
	}})
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("key=s3cr3t-value-42 tok=ghp_abcdEFGH ab\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := call(t, l, "read", `{"path":"f.txt"}`)
	if got, want := text(r), "key=[REDACTED] tok=[REDACTED] ab\n"; got != want {
		t.Errorf("read: %q, want %q", got, want)
	}
	// The secret in details: edit's diff carries the old text.
	r = call(t, l, "edit", `{"path":"f.txt","edits":[{"oldText":"tok=","newText":"token="}]}`)
	if r.IsError {
		t.Fatalf("edit: %s", text(r))
	}
	d, _ := json.Marshal(r.Details)
	if strings.Contains(string(d), "s3cr3t") || strings.Contains(string(d), "ghp_abcd") || !strings.Contains(string(d), Redacted) {
		t.Errorf("details not redacted: %s", d)
	}
	// Streamed partial results are redacted too.
	var partials []string
	ctx := context.Background()
	b := l.RunBatch(ctx, nil, []loop.ToolCall{{ID: "b", Name: "bash", Arguments: json.RawMessage(bashArgs(`echo "$PI_TEST_SECRET"; sleep 0.3; echo done`))}}, func(ev loop.Event) {
		if u, ok := ev.(loop.ToolExecutionUpdate); ok {
			partials = append(partials, text(u.PartialResult))
		}
	})
	if got := text(b.Results[0].Result); got != "[REDACTED]\ndone\n" {
		t.Errorf("bash: %q", got)
	}
	if len(partials) == 0 {
		t.Fatal("no partial results")
	}
	for _, p := range partials {
		if strings.Contains(p, "s3cr3t") {
			t.Errorf("partial result leaks the secret: %q", p)
		}
	}
}

func TestRedactorDetailsTyped(t *testing.T) {
	r, err := compileRedactor(RedactPolicy{Patterns: []string{`SECRET\d+`}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	type inner struct {
		Path  string   `json:"path"`
		Lines []string `json:"lines"`
	}
	in := &loop.Result{Content: []loop.Content{loop.Text("a SECRET1 b"), loop.Image("U0VDUkVUMQ==", "image/png")},
		Details: inner{Path: "/w/SECRET22", Lines: []string{"x", "SECRET3"}}}
	out := r.result(in)
	if out == in {
		t.Fatal("result not copied")
	}
	if out.Content[0].Text != "a [REDACTED] b" || out.Content[1].Data != "U0VDUkVUMQ==" {
		t.Errorf("content: %+v", out.Content)
	}
	if in.Content[0].Text != "a SECRET1 b" {
		t.Error("input result modified")
	}
	d, _ := json.Marshal(out.Details)
	if string(d) != `{"lines":["x","[REDACTED]"],"path":"/w/[REDACTED]"}` {
		t.Errorf("details: %s", d)
	}
	clean := &loop.Result{Content: []loop.Content{loop.Text("nothing")}, Details: inner{Path: "p"}}
	if r.result(clean) != clean {
		t.Error("a clean result was copied")
	}
	if _, err := compileRedactor(RedactPolicy{Patterns: []string{`x*`}}, nil); err == nil {
		t.Error("a pattern matching the empty string was accepted")
	}
}

func TestAuditLog(t *testing.T) {
	t.Setenv("PI_TEST_SECRET", "audit-secret-99")
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	_, l, _ := openPolicy(t, Policy{
		AuditLog: logPath,
		Commands: CommandRules{Deny: []Rule{{Prefix: "reboot"}}},
		Redact:   RedactPolicy{Env: []string{"PI_TEST_SECRET"}},
	})
	lines := func() []AuditEntry {
		t.Helper()
		f, err := os.Open(logPath)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var out []AuditEntry
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var e AuditEntry
			dec := json.NewDecoder(strings.NewReader(sc.Text()))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&e); err != nil {
				t.Fatalf("line %q: %v", sc.Text(), err)
			}
			out = append(out, e)
		}
		return out
	}

	call(t, l, "bash", bashArgs("echo audit-secret-99"))
	// Written per entry: readable before the sandbox closes.
	es := lines()
	if len(es) != 2 {
		t.Fatalf("after one call: %d lines: %+v", len(es), es)
	}
	if es[0].Outcome != OutcomeStarted || es[1].Outcome != OutcomeOK || es[1].Tool != "bash" || es[1].CallID != "c1" || es[1].DurationMs == nil || es[1].IsError {
		t.Errorf("entries: %+v", es)
	}
	if strings.Contains(string(es[1].Arguments), "audit-secret") || !strings.Contains(string(es[1].Arguments), Redacted) {
		t.Errorf("arguments not redacted: %s", es[1].Arguments)
	}
	if time.Since(es[1].Time) > time.Minute {
		t.Errorf("time %v", es[1].Time)
	}

	call(t, l, "bash", bashArgs("reboot now"))
	call(t, l, "read", `{"path":"missing.txt"}`)
	es = lines()
	if len(es) != 5 {
		t.Fatalf("%d lines: %+v", len(es), es)
	}
	if b := es[2]; b.Outcome != OutcomeBlocked || !b.IsError || !strings.HasPrefix(b.Message, BlockedPrefix) || b.DurationMs != nil {
		t.Errorf("blocked entry: %+v", b)
	}
	if e := es[4]; e.Outcome != OutcomeError || !e.IsError || e.Tool != "read" || !strings.Contains(e.Message, "ENOENT") {
		t.Errorf("error entry: %+v", e)
	}
	fi, err := os.Stat(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
}

func TestEnvAllowList(t *testing.T) {
	t.Setenv("PI_TEST_PASS", "passed")
	t.Setenv("PI_TEST_PREFIX_A", "pa")
	t.Setenv("PI_TEST_HIDDEN", "hidden")
	_, l, _ := openPolicy(t, Policy{Env: EnvPolicy{
		Allow: []string{"PI_TEST_PASS", "PI_TEST_PREFIX_*", "PATH"},
		Set:   map[string]string{"PI_TEST_FIXED": "fixed", "PAGER": "less"},
	}})
	r := call(t, l, "bash", bashArgs(`echo "$PI_TEST_PASS|$PI_TEST_PREFIX_A|${PI_TEST_HIDDEN-unset}|$PI_TEST_FIXED|$PAGER|${HOME-nohome}"`))
	if got, want := text(r), "passed|pa|unset|fixed|cat|nohome\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}

	// Without an allow list the local backend passes the host environment.
	_, l, _ = openPolicy(t, Policy{})
	r = call(t, l, "bash", bashArgs(`echo "$PI_TEST_HIDDEN"`))
	if text(r) != "hidden\n" {
		t.Errorf("default local env: %q", text(r))
	}
}

// TestEnvRemoteBackends: the policy's environment as the bash tool's
// options. A remote backend gets the allowed host variables as entries; a
// backend whose base is the host's (ops.CapHostEnv) has its base replaced by
// them once Allow is set, and kept otherwise.
func TestEnvRemoteBackends(t *testing.T) {
	t.Setenv("PI_TEST_PASS", "passed")
	t.Setenv("PI_TEST_HIDDEN", "hidden")
	e := EnvPolicy{Allow: []string{"PI_TEST_PASS"}, Set: map[string]string{"A": "1"}}
	remote := ops.Info{Backend: "docker"}
	host := ops.Info{Backend: "local", Capabilities: []string{ops.CapHostEnv}}

	o := toolOptions(remote, e, nil)
	if got := strings.Join(o.Env, " "); got != "PI_TEST_PASS=passed A=1" || o.BaseEnv != nil {
		t.Errorf("remote: env %q, base %q (want none)", got, o.BaseEnv)
	}
	if o := toolOptions(remote, EnvPolicy{}, nil); len(o.Env) != 0 || o.BaseEnv != nil {
		t.Errorf("an empty policy on a remote backend: env %q, base %q", o.Env, o.BaseEnv)
	}
	o = toolOptions(host, e, nil)
	if got := strings.Join(o.Env, " "); got != "A=1" || strings.Join(o.BaseEnv, " ") != "PI_TEST_PASS=passed" {
		t.Errorf("host-env backend: base %q, env %q", o.BaseEnv, got)
	}
	if o := toolOptions(host, EnvPolicy{Allow: []string{}}, nil); o.BaseEnv == nil || len(o.BaseEnv) != 0 {
		t.Errorf("an empty allow list: base %#v, want empty, not nil", o.BaseEnv)
	}
	if o := toolOptions(host, EnvPolicy{Set: map[string]string{"A": "1"}}, nil); o.BaseEnv != nil || strings.Join(o.Env, " ") != "A=1" {
		t.Errorf("no allow list: the host base was replaced (%q) or env %q", o.BaseEnv, o.Env)
	}
}

func TestPolicyFileAndFlags(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(file, []byte(`{
  "commands": {"allow": [{"prefix": "git "}], "deny": [{"regex": "--force", "reason": "no force pushes"}]},
  "denyTools": ["edit"],
  "env": {"allow": ["PATH"], "set": {"CI": "true"}},
  "redact": {"env": ["TOKEN"], "patterns": ["ghp_\\w+"]},
  "auditLog": "/tmp/a.jsonl"
}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var cfg Config
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	cfg.Policy.RegisterFlags(fs)
	err := fs.Parse([]string{"--deny-command", "rm", "--config", file, "--env", "HOME", "--env", "X=1", "--redact-regex", "sk-[a-z]+", "--audit-log", "/tmp/b.jsonl", "--deny-tool", "write"})
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Policy
	if len(p.Commands.Allow) != 1 || len(p.Commands.Deny) != 2 || p.Commands.Deny[0].Prefix != "rm" || p.Commands.Deny[1].Reason != "no force pushes" {
		t.Errorf("commands: %+v", p.Commands)
	}
	if strings.Join(p.Env.Allow, ",") != "PATH,HOME" || p.Env.Set["CI"] != "true" || p.Env.Set["X"] != "1" {
		t.Errorf("env: %+v", p.Env)
	}
	if strings.Join(p.Redact.Patterns, ",") != `ghp_\w+,sk-[a-z]+` || p.AuditLog != "/tmp/b.jsonl" || strings.Join(p.DenyTools, ",") != "edit,write" {
		t.Errorf("policy: %+v", p)
	}

	for _, bad := range []string{
		`{"commands": {"deny": [{"regex": "("}]}}`,
		`{"commands": {"deny": [{"prefix": "a", "regex": "b"}]}}`,
		`{"commands": {"deny": [{}]}}`,
		`{"comands": {}}`,
		`{"redact": {"patterns": [".*"]}}`,
		`{"env": {"allow": ["*"]}}`,
	} {
		if _, err := ParsePolicy([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
	fs = flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	cfg = Config{}
	cfg.Policy.RegisterFlags(fs)
	if err := fs.Parse([]string{"--deny-command-regex", "("}); err == nil {
		t.Error("a bad regex flag was accepted")
	}
}
