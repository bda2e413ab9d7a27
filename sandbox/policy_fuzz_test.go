package sandbox

import (
	"strings"
	"testing"
)

// FuzzCommandPolicy: checking never panics, a denied command stays denied
// when other commands surround it, and a line allowed by an allow-only
// policy has every one of its commands (as parsed, or as split when the
// parser refuses the line) allowed on its own.
func FuzzCommandPolicy(f *testing.F) {
	for _, s := range []string{"rm -rf /", "echo hi; rm -rf x", "sudo FOO=1 /bin/rm -rf x", "git status && ls",
		"bash -c 'rm -rf x'", "if true; then echo; fi", "echo $(curl x)", "`rm -rf`", "\x00", "é; rm",
		"stdbuf -o L rm -rf x", "timeout -s KILL 5 rm -rf x", ">/dev/null rm -rf x", "rm -r\\\nf x", "coproc rm -rf x", "echo 'a; rm -rf x'"} {
		f.Add(s)
	}
	deny, err := compileCommands(CommandRules{Deny: []Rule{{Prefix: "rm -rf"}, {Regex: `\bcurl\b`}}})
	if err != nil {
		f.Fatal(err)
	}
	allow, err := compileCommands(CommandRules{Allow: []Rule{{Prefix: "echo"}, {Prefix: "git status"}, {Regex: `^ls\b`}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if reason := deny.check(line); reason != "" {
			for _, wrapped := range []string{"true; " + line, line + "\ntrue", "echo $(" + line + ")", "x=1 && " + line} {
				if deny.check(wrapped) == "" {
					t.Errorf("%q is denied (%s) but %q is not", line, reason, wrapped)
				}
			}
		}
		if allow.check(line) == "" {
			segs := simpleCommands(line)
			if cmds, err := parseCommands(line); err == nil {
				segs = nil
				for _, c := range cmds {
					if len(c.words) > 0 {
						segs = append(segs, c.written)
					}
				}
			}
			for _, seg := range segs {
				if r := allow.check(seg); r != "" && !strings.ContainsAny(seg, ";&|\n\r()`{}<>$\\'\"#") {
					t.Errorf("%q is allowed but its command %q is not: %s", line, seg, r)
				}
			}
		}
	})
}
