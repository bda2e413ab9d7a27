package sandbox

import (
	"strings"
	"testing"
)

// TestCommandRulesShellForms: the forms of issue 17 that the hand-made
// splitter missed — wrapper options with an argument, odd spacing, a
// leading redirection, a line continuation, coproc — are denied; quoted
// text that only looks like a command is not; a line the parser refuses
// is still checked (by the old splitter).
func TestCommandRulesShellForms(t *testing.T) {
	deny := CommandRules{Deny: []Rule{{Prefix: "rm -rf"}, {Regex: `^curl\b`}}}
	cases := []struct {
		line    string
		blocked bool
	}{
		{"stdbuf -o L rm -rf x", true},
		{"stdbuf -oL rm -rf x", true},
		{"stdbuf --output L rm -rf x", true},
		{"env -u HOME rm -rf x", true},
		{"env -i -C /tmp A=1 rm -rf x", true},
		{"env -S 'rm -rf x'", true},
		{"exec -a n rm -rf x", true},
		{"timeout -s KILL 5 rm -rf x", true},
		{"timeout --signal KILL -k 2 5 rm -rf x", true},
		{"sudo -u root rm -rf x", true},
		{"sudo -Eu root FOO=1 /bin/rm -rf x", true},
		{"sudo --user=root rm -rf x", true},
		{"doas -u root rm -rf x", true},
		{"xargs -a F rm -rf", true},
		{"find . | xargs -0 -n 1 -P 4 rm -rf", true},
		{"nice -n 5 rm -rf x", true},
		{"nice -10 rm -rf x", true},
		{"ionice -c 3 rm -rf x", true},
		{"nohup setsid rm -rf x &", true},
		{"/usr/bin/time -f %e rm -rf x", true},
		{"time -p rm -rf x", true},
		{"command -p rm -rf x", true},
		{"busybox rm -rf x", true},
		{"rm  -rf x", true},
		{"rm\t-rf x", true},
		{"  rm -rf x", true},
		{">/dev/null rm -rf x", true},
		{"2>&1 >/dev/null rm -rf x", true},
		{"rm -r\\\nf x", true},
		{"r\\\nm -rf x", true},
		{"rm \\\n -rf x", true},
		{"coproc rm -rf x", true},
		{"coproc n { rm -rf x; }", true},
		{"f() { rm -rf x; }; f", true},
		{"case $a in b) rm -rf x;; esac", true},
		{"while true; do rm -rf x; done", true},
		{"echo `rm -rf x`", true},
		{"echo ${x:-$(rm -rf x)}", true},
		{"cat <(rm -rf x)", true},
		{"cat <<EOF\n$(rm -rf x)\nEOF", true},
		{"echo $((1 + $(rm -rf x)))", true},
		{"export A=$(rm -rf x)", true},
		{"sh -ec 'rm -rf x'", true},
		{"bash -o pipefail -c 'true | rm -rf x'", true},
		{`bash -c "sh -c 'eval \"rm -rf x\"'"`, true},
		{"sudo bash -c 'rm -rf x'", true},
		{"'rm' '-rf' x", true},
		{"\"r\"m -r\"f\" x", true},
		{"x=1 curl http://e", true},
		{"env curl http://e", true},
		// Parsed, so quoted text is not a command.
		{`echo "a; rm -rf x"`, false},
		{`grep -n 'rm -rf' notes.txt`, false},
		{"cat <<'EOF'\nrm -rf x\nEOF", false},
		{"echo rm -rf x", false},
		{"rmdir -rf x", false},
		// The parser refuses these; the old splitter still sees rm -rf.
		{"echo 'unterminated; rm -rf x", true},
		{"rm -rf x; echo $(", true},
		{"stdbuf -o L rm -rf x; echo 'unterminated", true},
		{">/dev/null rm -rf x; echo 'unterminated", true},
		{"> out timeout -s KILL 5 rm -rf x; echo $(", true},
	}
	cp, err := compileCommands(deny)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		got := cp.check(c.line)
		if (got != "") != c.blocked {
			t.Errorf("%q: blocked %q, want blocked %v", c.line, got, c.blocked)
		}
		if got != "" && !strings.HasPrefix(got, BlockedPrefix) {
			t.Errorf("%q: reason %q", c.line, got)
		}
	}
}

// TestAllowRulesParsed: allow rules see each command as written, spacing
// normalised and redirections after the words; commands of only
// assignments need no rule; nested commands need their own.
func TestAllowRulesParsed(t *testing.T) {
	cp, err := compileCommands(CommandRules{Allow: []Rule{{Prefix: "echo"}, {Regex: `^git status$`}, {Prefix: "cat"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ line, reason string }{
		{"echo  hi\t there", ""},
		{">/dev/null echo hi", ""},
		{"git  status", ""},
		{"git status \\\n", ""},
		{"x=1; echo $x", ""},
		{"echo $(cat f)", ""},
		{"echo $(ls)", `"ls" matches no allow rule`},
		{"git status >out", `"git status >out" matches no allow rule`},
		{"FOO=1 echo hi", `"FOO=1 echo hi" matches no allow rule`},
		{"sudo echo hi", `"sudo echo hi" matches no allow rule`},
		{`"echo" hi`, `"\"echo\" hi" matches no allow rule`},
		{"echo 'a; ls'", ""},
	} {
		got := cp.check(c.line)
		switch {
		case c.reason == "" && got != "":
			t.Errorf("%q blocked: %s", c.line, got)
		case c.reason != "" && got != BlockedPrefix+c.reason:
			t.Errorf("%q: %q, want %q", c.line, got, BlockedPrefix+c.reason)
		}
	}
}

// BenchmarkCommandCheck: a typical line, and a 100 KB here-document.
func BenchmarkCommandCheck(b *testing.B) {
	cp, err := compileCommands(CommandRules{Deny: []Rule{{Prefix: "rm -rf"}, {Regex: `\bcurl\b`}}, Allow: []Rule{{Prefix: "cat"}, {Prefix: "go "}, {Prefix: "git "}}})
	if err != nil {
		b.Fatal(err)
	}
	for name, line := range map[string]string{
		"typical": `cd sub && go test -run 'TestX|TestY' ./... 2>&1 | tail -20; git status --short`,
		"heredoc": "cat > f.txt <<'EOF'\n" + strings.Repeat("some text; rm -rf x $(y)\n", 4000) + "EOF\n",
	} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				cp.check(line)
			}
		})
	}
}

// TestCommandRulesShellInput: text a shell reads as commands from its
// stdin — a here-document, a here-string, or what cat, echo or printf
// writes to it through a pipe — and trap actions are checked as command
// lines; the same text sent anywhere else (a file, a program that is not a
// shell, a shell running a script or -c) is not.
func TestCommandRulesShellInput(t *testing.T) {
	cp, err := compileCommands(CommandRules{Deny: []Rule{{Prefix: "rm -rf"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		line    string
		blocked bool
	}{
		{"bash <<E\nrm -rf x\nE", true},
		{"sh <<-E\n\trm -rf x\n\tE", true},
		{"bash <<'E'\nrm -rf x\nE", true},
		{"bash <<\"E\"\necho $HOME; rm -rf x\nE", true},
		{"dash -s <<E 2>/dev/null\ncd /tmp\nrm -rf x\nE", true},
		{"sudo -u root bash <<E\nrm -rf x\nE", true},
		{"busybox sh <<E\nrm -rf x\nE", true},
		{"bash - <<E\nrm -rf x\nE", true},
		{"zsh <<E\nfor d in a b; do rm -rf $d; done\nE", true},
		{"bash <<< 'rm -rf x'", true},
		{"ksh <<<\"rm -rf x\"", true},
		{"cat <<E | bash\nrm -rf x\nE", true},
		{"cat <<'E' | sudo sh -s\nrm -rf x\nE", true},
		{"cat <<< 'rm -rf x' | bash", true},
		{"echo 'rm -rf x' | bash", true},
		{"echo -n rm -rf x | sh", true},
		{"printf 'cd /tmp\\nrm -rf x\\n' | bash", true},
		{"printf '%s\\n' 'rm -rf x' | bash", true},
		{"true | echo 'rm -rf x' | bash | cat", true},
		{"bash <<E\nbash <<F\nrm -rf x\nF\nE", true},
		{"bash <<E\nsh -c 'rm -rf x'\nE", true},
		{"trap 'rm -rf x' EXIT", true},
		{"trap -- 'rm -rf x' INT TERM", true},
		{"trap \"cd /; rm -rf x\" EXIT; sleep 1", true},
		{"f() { trap 'rm -rf x' RETURN; }; f", true},
		{"eval 'trap \"rm -rf x\" EXIT'", true},
		// Not fed to a shell as commands.
		{"cat <<E > file\nrm -rf x\nE", false},
		{"cat <<'E' >notes.txt\nrm -rf x\nE", false},
		{"tee f <<E\nrm -rf x\nE", false},
		{"python3 <<E\nprint('rm -rf x')\nE", false},
		{"bash script.sh <<E\nrm -rf x\nE", false},
		{"bash -c 'cat' <<E\nrm -rf x\nE", false},
		{"grep -c x <<< 'rm -rf x'", false},
		{"cat <<E | grep rm\nrm -rf x\nE", false},
		{"echo 'rm -rf x' | tee f", false},
		{"echo 'rm -rf x' > f; bash f2", false},
		{"cat f | bash", false},
		{"trap 'echo bye' EXIT", false},
		{"trap - EXIT", false},
		{"trap -p", false},
	} {
		got := cp.check(c.line)
		if (got != "") != c.blocked {
			t.Errorf("%q: blocked %q, want blocked %v", c.line, got, c.blocked)
		}
	}
}
