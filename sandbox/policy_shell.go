package sandbox

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// shellCommand is one simple command of a bash line, found by parsing it.
type shellCommand struct {
	// written is the command as written: its assignments, words and
	// redirections (wherever they stood: >/dev/null rm x is rm x >/dev/null),
	// one space apart, quotes kept, line continuations removed. Allow rules
	// see it.
	written string
	// words are its words with quotes and backslashes removed (expansions
	// as written: "$HOME"/x is $HOME/x). Deny rules see them.
	words []string
	// lines are the command lines it reads on stdin when it is a shell
	// reading commands from there: its here-documents and here-strings,
	// and the text an earlier pipeline stage (cat, echo, printf) writes to
	// it. Deny rules check them as they do sh -c LINE.
	lines []string
}

// parseCommands lists every simple command of line, at any depth: in
// pipelines and lists, compound commands, functions, coproc, command and
// process substitutions, parameter expansions and here-documents (a shell
// reading one on stdin gets its body as lines). A command
// of only assignments or redirections has no words; export, local, let,
// [[ ]] and (( )) are commands whose one word is their text.
func parseCommands(line string) ([]shellCommand, error) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil {
		return nil, err
	}
	src := func(n syntax.Node) string {
		return strings.ReplaceAll(line[n.Pos().Offset():n.End().Offset()], "\\\n", "")
	}
	piped := pipedTexts(f, src)
	var out []shellCommand
	syntax.Walk(f, func(n syntax.Node) bool {
		st, ok := n.(*syntax.Stmt)
		if !ok || st.Cmd == nil {
			return true
		}
		switch c := st.Cmd.(type) {
		case *syntax.CallExpr:
			var parts []syntax.Node
			for _, a := range c.Assigns {
				parts = append(parts, a)
			}
			for _, w := range c.Args {
				parts = append(parts, w)
			}
			for _, r := range st.Redirs {
				parts = append(parts, r)
			}
			written := make([]string, len(parts))
			for i, p := range parts {
				written[i] = src(p)
			}
			sc := shellCommand{written: strings.Join(written, " ")}
			for _, w := range c.Args {
				sc.words = append(sc.words, wordValue(w, src))
			}
			if stdinShell(sc.words) {
				sc.lines = append(stdinTexts(st, src), piped[st]...)
			}
			out = append(out, sc)
		case *syntax.DeclClause, *syntax.LetClause, *syntax.TestClause, *syntax.ArithmCmd:
			s := src(c)
			out = append(out, shellCommand{written: s, words: []string{s}})
		}
		return true
	})
	return out, nil
}

// wordValue is w without quoting: literal parts unescaped, quoted parts'
// contents, expansions as written.
func wordValue(w *syntax.Word, src func(syntax.Node) string) string {
	var b strings.Builder
	var parts func([]syntax.WordPart, bool)
	parts = func(ps []syntax.WordPart, inDouble bool) {
		for _, p := range ps {
			switch x := p.(type) {
			case *syntax.Lit:
				b.WriteString(unescape(x.Value, inDouble))
			case *syntax.SglQuoted:
				b.WriteString(x.Value)
			case *syntax.DblQuoted:
				parts(x.Parts, true)
			default:
				b.WriteString(src(x))
			}
		}
	}
	parts(w.Parts, false)
	return b.String()
}

// unescape removes the backslashes that quote the next character: every
// one outside double quotes, inside them those before $ ` " \.
func unescape(s string, inDouble bool) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && (!inDouble || strings.IndexByte("$`\"\\", s[i+1]) >= 0) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// wrapper describes a command that runs another: the short options (one
// letter each) and long ones that take an argument, and what follows the
// options.
type wrapper struct {
	argShort string
	argLong  []string
	then     wrapperThen
	// lineOpt is an option whose argument is a command line (env -S).
	lineOpt byte
}

type wrapperThen int

const (
	thenCommand  wrapperThen = iota // the command
	thenDuration                    // a duration, then the command (timeout)
	thenShell                       // with -c a command line (sh -c), else a script
	thenLine                        // the words are a command line (eval)
	thenTrap                        // the first word is a command line (trap's action)
)

var wrappers = map[string]wrapper{
	"sudo":    {argShort: "CDghpRrTtUu", argLong: []string{"--user", "--group", "--host", "--prompt", "--chdir", "--chroot", "--role", "--type", "--other-user", "--command-timeout", "--close-from"}},
	"doas":    {argShort: "uC"},
	"env":     {argShort: "uCSP", argLong: []string{"--unset", "--chdir", "--split-string"}, lineOpt: 'S'},
	"command": {},
	"builtin": {},
	"exec":    {argShort: "a"},
	"nohup":   {},
	"setsid":  {},
	"time":    {argShort: "fo", argLong: []string{"--format", "--output"}},
	"nice":    {argShort: "n", argLong: []string{"--adjustment"}},
	"ionice":  {argShort: "cnpPu", argLong: []string{"--class", "--classdata"}},
	"timeout": {argShort: "ks", argLong: []string{"--kill-after", "--signal"}, then: thenDuration},
	"stdbuf":  {argShort: "ioe", argLong: []string{"--input", "--output", "--error"}},
	"xargs":   {argShort: "adEILnPs", argLong: []string{"--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"}},
	"busybox": {},
	"eval":    {then: thenLine},
	"trap":    {then: thenTrap},
	"sh":      {argShort: "oO", then: thenShell},
	"bash":    {argShort: "oO", argLong: []string{"--rcfile", "--init-file"}, then: thenShell},
	"dash":    {argShort: "o", then: thenShell},
	"ash":     {argShort: "o", then: thenShell},
	"zsh":     {argShort: "o", then: thenShell},
	"ksh":     {argShort: "o", then: thenShell},
	"mksh":    {argShort: "o", then: thenShell},
}

// commandStarts lists where the commands a simple command runs start among
// its words: 0, then after each leading wrapper with its options and
// operands (sudo -u root, timeout -s KILL 5, env -u HOME A=1), and after
// assignments. lines are command lines a wrapper runs (sh -c LINE, eval
// WORDS, env -S LINE, trap LINE SIGNAL), for deny rules to check in turn.
func commandStarts(words []string) (starts []int, lines []string) {
	starts = []int{0}
	i := 0
	for i < len(words) {
		w := words[i]
		if isAssignment(w) {
			i++
			starts = append(starts, i)
			continue
		}
		wr, ok := wrappers[baseName(w)]
		if !ok {
			break
		}
		i++
		var letters string
		var split []string
		i, letters, split = skipOptions(words, i, wr)
		lines = append(lines, split...)
		switch wr.then {
		case thenDuration:
			if i < len(words) {
				i++
			}
		case thenShell:
			if strings.ContainsRune(letters, 'c') && i < len(words) {
				lines = append(lines, words[i])
				i = len(words)
			}
		case thenLine:
			if i < len(words) {
				lines = append(lines, strings.Join(words[i:], " "))
				i = len(words)
			}
		case thenTrap:
			if i < len(words) {
				lines = append(lines, words[i])
				i = len(words)
			}
		}
		if i >= len(words) {
			break
		}
		starts = append(starts, i)
	}
	return starts, lines
}

// skipOptions skips the options at words[i:] of wr and returns the index
// after them; for a shell, the letters of its short options (c for -c, s
// for -s); for env -S, the split strings.
func skipOptions(words []string, i int, wr wrapper) (int, string, []string) {
	var letters []byte
	var split []string
	for i < len(words) {
		w := words[i]
		shellPlus := wr.then == thenShell && len(w) > 1 && w[0] == '+'
		if w == "--" {
			return i + 1, string(letters), split
		}
		if len(w) < 2 || (w[0] != '-' && !shellPlus) {
			return i, string(letters), split
		}
		if strings.HasPrefix(w, "--") {
			name, val, eq := strings.Cut(w, "=")
			takes := slices.Contains(wr.argLong, name)
			switch {
			case name == "--split-string" && eq:
				split = append(split, val)
			case name == "--split-string" && i+1 < len(words):
				split = append(split, words[i+1])
			}
			i++
			if takes && !eq {
				i++
			}
			continue
		}
		i++
		for j := 1; j < len(w); j++ {
			c := w[j]
			if wr.then == thenShell {
				letters = append(letters, c)
			}
			if strings.IndexByte(wr.argShort, c) < 0 {
				continue
			}
			arg := w[j+1:]
			if arg == "" && i < len(words) {
				arg = words[i]
				i++
			}
			if c == wr.lineOpt {
				split = append(split, arg)
			}
			break
		}
	}
	return i, string(letters), split
}

func isAssignment(w string) bool {
	name, _, ok := strings.Cut(w, "=")
	if !ok || name == "" {
		return false
	}
	for i, c := range name {
		if c != '_' && !('a' <= c && c <= 'z') && !('A' <= c && c <= 'Z') && (i == 0 || !('0' <= c && c <= '9')) {
			return false
		}
	}
	return true
}
