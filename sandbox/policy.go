package sandbox

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// Policy is what the sandbox enforces around the tools, beyond path
// confinement: command rules, a tool deny list, the environment commands
// get, secret redaction and an audit log. The zero value enforces nothing
// (and, on the local backend, passes the host environment to commands, as
// pi does).
//
// It is read from a JSON file (--config FILE, [LoadPolicy]) whose keys are
// the json names below, and from flags; the two merge: lists are appended,
// Env.Set entries and AuditLog given later win. Unknown keys are an error.
type Policy struct {
	// Commands are bash's allow and deny rules (see [CommandRules]).
	Commands CommandRules `json:"commands"`
	// DenyTools names tools every call of which is blocked: some of read,
	// bash, edit, write, grep, find and ls (an unknown name is an error).
	DenyTools []string `json:"denyTools,omitempty"`
	// Env says which host environment variables commands see.
	Env EnvPolicy `json:"env"`
	// Redact names secrets replaced by "[REDACTED]" in every result.
	Redact RedactPolicy `json:"redact"`
	// AuditLog is a file that gets one JSON line per call (appended; made
	// with mode 0600), and one per egress proxy connection. Empty: no
	// audit log.
	AuditLog string `json:"auditLog,omitempty"`
	// Network is the egress allow-list (see [NetworkPolicy]).
	Network NetworkPolicy `json:"network"`
}

// CommandRules are bash's command policy. A command line is parsed as bash
// parses it into its simple commands, at any depth (lists, pipelines,
// compound commands, functions, coproc, command and process substitutions,
// unquoted here-documents); time and ! are not part of a command.
//
// A call is blocked when a deny rule matches any simple command: its words
// with quotes and backslashes removed, joined by one space (redirections
// are not words), and the same after each leading VAR=value assignment and
// wrapper with its options and their arguments (sudo -u root, env -u NAME,
// exec -a NAME, timeout -s SIG 5, stdbuf -o L, xargs -a FILE, nice -n N
// ...), with a directory removed (/bin/rm); the line a wrapper runs (sh -c
// LINE, eval WORDS, env -S LINE) is checked in turn, and deny regular
// expressions also see the whole line. A line the parser refuses is split
// by hand instead (at ; & | newlines, parentheses, braces, backquotes and
// $( ), and deny rules see the pieces with quoting removed. When Allow is
// not empty, every simple command with words must match an allow rule as
// written: assignments, words (quotes kept) and redirections, one space
// apart.
//
// This is a guard rail against mistakes, not a boundary: a shell can always
// build a command the rules do not see (sh -c "$(echo ... | base64 -d)").
type CommandRules struct {
	Allow []Rule `json:"allow,omitempty"`
	Deny  []Rule `json:"deny,omitempty"`
}

// Rule matches a simple command by prefix or by regular expression (Go
// syntax, unanchored unless the pattern anchors itself). Exactly one of
// Prefix and Regex is set.
type Rule struct {
	// Prefix matches a command that starts with it at a word boundary:
	// "rm -rf" matches "rm -rf /tmp/x", "rm" matches "rm x" but not "rmdir".
	Prefix string `json:"prefix,omitempty"`
	Regex  string `json:"regex,omitempty"`
	// Reason is the text after "Command blocked by policy: ". Empty: the
	// rule itself, e.g. `deny prefix "rm -rf"`.
	Reason string `json:"reason,omitempty"`
}

func (r Rule) String() string {
	if r.Regex != "" {
		return fmt.Sprintf("regex %q", r.Regex)
	}
	return fmt.Sprintf("prefix %q", r.Prefix)
}

// EnvPolicy says which host environment variables reach commands.
//
// On docker and ssh nothing of the host passes unless listed in Allow. On
// the local backend the whole host environment passes while Allow is nil
// (pi's behaviour); once Allow is set — even to an empty list — only the
// listed variables pass (list PATH and HOME if commands need them).
type EnvPolicy struct {
	// Allow names host variables passed to commands; a trailing "*" matches
	// a prefix ("LC_*"). Unset host variables are skipped.
	Allow []string `json:"allow"`
	// Set gives variables fixed values, on every backend. They override
	// the allowed host values; the tools' own non-interactive settings
	// (PAGER=cat ...) override both.
	Set map[string]string `json:"set,omitempty"`
}

// RedactPolicy names secrets that never reach the model: every occurrence in
// a result's text content and details strings (streamed partial results
// included) and in the audit log becomes "[REDACTED]".
type RedactPolicy struct {
	// Env names environment variables whose values are secret: the value
	// Env.Set gives the name and the host's value, both read when the
	// sandbox opens. Values shorter than 4 bytes are ignored: they would
	// blank ordinary text. [Policy.Warnings] reports names with nothing to
	// redact.
	Env []string `json:"env,omitempty"`
	// Patterns are regular expressions (Go syntax) of secrets, e.g.
	// "ghp_[A-Za-z0-9]{36}".
	Patterns []string `json:"patterns,omitempty"`
}

// LoadPolicy reads a policy file (JSON, see [Policy]).
func LoadPolicy(name string) (Policy, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return Policy{}, fmt.Errorf("sandbox: policy: %w", err)
	}
	return ParsePolicy(data)
}

// ParsePolicy decodes a policy from JSON and checks it compiles.
func ParsePolicy(data []byte) (Policy, error) {
	var p Policy
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Policy{}, fmt.Errorf("sandbox: policy: %w", err)
	}
	if dec.More() {
		return Policy{}, fmt.Errorf("sandbox: policy: more than one JSON value")
	}
	if _, err := compilePolicy(p, nil); err != nil {
		return Policy{}, err
	}
	return p, nil
}

// Merge adds q to p: lists are appended, q's Env.Set entries and AuditLog
// win.
func (p *Policy) Merge(q Policy) {
	p.Commands.Allow = append(p.Commands.Allow, q.Commands.Allow...)
	p.Commands.Deny = append(p.Commands.Deny, q.Commands.Deny...)
	p.DenyTools = append(p.DenyTools, q.DenyTools...)
	if q.Env.Allow != nil {
		p.Env.Allow = append(append([]string{}, p.Env.Allow...), q.Env.Allow...)
	}
	if len(q.Env.Set) > 0 {
		if p.Env.Set == nil {
			p.Env.Set = map[string]string{}
		}
		maps.Copy(p.Env.Set, q.Env.Set)
	}
	p.Redact.Env = append(p.Redact.Env, q.Redact.Env...)
	p.Redact.Patterns = append(p.Redact.Patterns, q.Redact.Patterns...)
	if q.AuditLog != "" {
		p.AuditLog = q.AuditLog
	}
	p.Network.Allow = append(p.Network.Allow, q.Network.Allow...)
	p.Network.Inject = append(p.Network.Inject, q.Network.Inject...)
	p.Network.EgressCA = append(p.Network.EgressCA, q.Network.EgressCA...)
	p.Network.AllowSharedInject = p.Network.AllowSharedInject || q.Network.AllowSharedInject
	if q.Network.MaxConnections != 0 {
		p.Network.MaxConnections = q.Network.MaxConnections
	}
}

// RegisterFlags adds the policy flags; each has a key in the config file.
func (p *Policy) RegisterFlags(fs *flag.FlagSet) {
	fs.Func("config", "read the policy from a JSON `FILE` (merged with the policy flags)", func(v string) error {
		q, err := LoadPolicy(v)
		if err != nil {
			return err
		}
		p.Merge(q)
		return nil
	})
	rule := func(list *[]Rule, regex bool) func(string) error {
		return func(v string) error {
			r := Rule{Prefix: v}
			if regex {
				r = Rule{Regex: v}
			}
			if _, err := compileRule(r); err != nil {
				return err
			}
			*list = append(*list, r)
			return nil
		}
	}
	fs.Func("allow-command", "allow bash commands starting with `PREFIX` (repeatable; once given, others are blocked)", rule(&p.Commands.Allow, false))
	fs.Func("allow-command-regex", "allow bash commands matching `REGEX` (repeatable)", rule(&p.Commands.Allow, true))
	fs.Func("deny-command", "block bash commands starting with `PREFIX` (repeatable)", rule(&p.Commands.Deny, false))
	fs.Func("deny-command-regex", "block bash commands matching `REGEX` (repeatable)", rule(&p.Commands.Deny, true))
	fs.Func("deny-tool", "block every call of tool `NAME` (repeatable): "+strings.Join(ToolNames, ", "), func(v string) error {
		if err := checkToolName(v); err != nil {
			return err
		}
		p.DenyTools = append(p.DenyTools, v)
		return nil
	})
	fs.Func("env", "pass host variable `NAME` to commands, or set NAME=VALUE (repeatable; on local, once a NAME is given, only the listed host variables pass)", func(v string) error {
		if name, val, ok := strings.Cut(v, "="); ok {
			if name == "" {
				return fmt.Errorf("empty variable name in %q", v)
			}
			if p.Env.Set == nil {
				p.Env.Set = map[string]string{}
			}
			p.Env.Set[name] = val
			return nil
		}
		p.Env.Allow = append(p.Env.Allow, v)
		return nil
	})
	fs.Func("redact-env", "redact the value of variable `NAME` (the host's, or the one --env NAME=VALUE sets) from results (repeatable)", func(v string) error {
		p.Redact.Env = append(p.Redact.Env, v)
		return nil
	})
	fs.Func("redact-regex", "redact matches of `REGEX` from results (repeatable)", func(v string) error {
		if _, err := compileRedactor(RedactPolicy{Patterns: []string{v}}, nil); err != nil {
			return err
		}
		p.Redact.Patterns = append(p.Redact.Patterns, v)
		return nil
	})
	fs.StringVar(&p.AuditLog, "audit-log", p.AuditLog, "append one JSON line per tool call (and egress connection) to `FILE`")
	fs.Func("allow-host", "let commands reach `PATTERN` through the session's proxy: host, *.domain or IP literal, optional :PORT (repeatable; see docs/network.md)", func(v string) error {
		if _, err := parseHostRule(v); err != nil {
			return fmt.Errorf("network allow rule %q: %s", v, err)
		}
		p.Network.Allow = append(p.Network.Allow, v)
		return nil
	})
	fs.Func("egress-ca", "trust the CA certificates in PEM `FILE` for the HTTPS servers of inject rules, besides the system's (repeatable)", func(v string) error {
		p.Network.EgressCA = append(p.Network.EgressCA, v)
		return nil
	})
	fs.BoolVar(&p.Network.AllowSharedInject, "allow-shared-inject", p.Network.AllowSharedInject, "let network inject rules run on local and ssh, where the proxy's loopback is shared with the host's other users")
	fs.IntVar(&p.Network.MaxConnections, "max-egress-connections", p.Network.MaxConnections, "at most `N` egress proxy connections open at once (default 256)")
}

// ToolNames are the tools a sandbox has, the names DenyTools may use.
var ToolNames = []string{"read", "bash", "edit", "write", "grep", "find", "ls"}

func checkToolName(name string) error {
	if slices.Contains(ToolNames, name) {
		return nil
	}
	hint := ""
	if i := slices.IndexFunc(ToolNames, func(t string) bool { return strings.EqualFold(t, name) }); i >= 0 {
		hint = fmt.Sprintf("; did you mean %q?", ToolNames[i])
	}
	return fmt.Errorf("sandbox: policy: unknown tool %q in the tool deny list (known: %s)%s", name, strings.Join(ToolNames, ", "), hint)
}

// Warnings lists what p, as given, will not do, for a person to read:
// redact.env names that are set neither in the host environment nor by
// env.set, or whose values are too short to be redacted. Nothing is wrong
// with such a policy (an unset secret cannot leak), but a misspelt name
// would otherwise protect nothing without a word.
func (p Policy) Warnings() []string {
	var out []string
	for _, name := range slices.Compact(slices.Sorted(slices.Values(p.Redact.Env))) {
		vals := secretValues(p, os.LookupEnv)(name)
		switch {
		case len(vals) == 0:
			out = append(out, fmt.Sprintf("redact env %s: the variable is not set (not on the host, not by env.set / --env %s=VALUE), so nothing is redacted for it", name, name))
		case !slices.ContainsFunc(vals, func(v string) bool { return len(v) >= minSecretLen }):
			out = append(out, fmt.Sprintf("redact env %s: its value is shorter than %d bytes and is not redacted", name, minSecretLen))
		}
	}
	return out
}

// secretValues returns the values of a redact.env name: env.set's, then the
// host's through lookup (nil: not read).
func secretValues(p Policy, lookup func(string) (string, bool)) func(string) []string {
	return func(name string) []string {
		var vs []string
		if v, ok := p.Env.Set[name]; ok {
			vs = append(vs, v)
		}
		if lookup != nil {
			if v, ok := lookup(name); ok {
				vs = append(vs, v)
			}
		}
		return vs
	}
}
