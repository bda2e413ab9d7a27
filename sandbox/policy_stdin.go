package sandbox

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// stdinShell is whether the command of words (after leading assignments
// and wrappers) is a shell that reads its commands from stdin: sh, bash
// and the like with no -c and no script operand, or with -s, or with the
// operand "-".
func stdinShell(words []string) bool {
	i := 0
	for i < len(words) {
		w := words[i]
		if isAssignment(w) {
			i++
			continue
		}
		wr, ok := wrappers[baseName(w)]
		if !ok {
			return false
		}
		i++
		var letters string
		i, letters, _ = skipOptions(words, i, wr)
		switch wr.then {
		case thenDuration:
			if i < len(words) {
				i++
			}
		case thenShell:
			if strings.ContainsRune(letters, 'c') {
				return false
			}
			return i >= len(words) || words[i] == "-" || strings.ContainsRune(letters, 's')
		case thenLine, thenTrap:
			return false
		}
	}
	return false
}

// stdinTexts lists the text st's own redirections give its stdin: the
// bodies of its here-documents, as written (quoted delimiter or not, the
// shell reading them sees commands), and its here-strings' values.
func stdinTexts(st *syntax.Stmt, src func(syntax.Node) string) []string {
	var out []string
	for _, r := range st.Redirs {
		if r.N != nil && r.N.Value != "0" {
			continue
		}
		switch {
		case (r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc) && r.Hdoc != nil:
			out = append(out, src(r.Hdoc))
		case r.Op == syntax.WordHdoc && r.Word != nil:
			out = append(out, wordValue(r.Word, src))
		}
	}
	return out
}

// pipedTexts maps each pipeline stage that reads what an earlier stage
// writes, when that writer is simple enough to know its output: cat of its
// here-documents or here-strings (no file operands), echo and printf of
// their words (printf's \n as a line break). A stage that is a shell
// reading stdin runs that text as commands.
func pipedTexts(f *syntax.File, src func(syntax.Node) string) map[*syntax.Stmt][]string {
	piped := map[*syntax.Stmt][]string{}
	syntax.Walk(f, func(n syntax.Node) bool {
		b, ok := n.(*syntax.BinaryCmd)
		if !ok || (b.Op != syntax.Pipe && b.Op != syntax.PipeAll) {
			return true
		}
		if text := writtenText(lastStage(b.X), src); text != nil {
			to := firstStage(b.Y)
			piped[to] = append(piped[to], text...)
		}
		return true
	})
	return piped
}

func lastStage(st *syntax.Stmt) *syntax.Stmt {
	for {
		b, ok := st.Cmd.(*syntax.BinaryCmd)
		if !ok || (b.Op != syntax.Pipe && b.Op != syntax.PipeAll) {
			return st
		}
		st = b.Y
	}
}

func firstStage(st *syntax.Stmt) *syntax.Stmt {
	for {
		b, ok := st.Cmd.(*syntax.BinaryCmd)
		if !ok || (b.Op != syntax.Pipe && b.Op != syntax.PipeAll) {
			return st
		}
		st = b.X
	}
}

// writtenText is what st writes to its stdout when it is cat, echo or
// printf whose output is known from the line alone, or nil.
func writtenText(st *syntax.Stmt, src func(syntax.Node) string) []string {
	c, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(c.Args) == 0 {
		return nil
	}
	words := make([]string, len(c.Args))
	for i, w := range c.Args {
		words[i] = wordValue(w, src)
	}
	switch baseName(words[0]) {
	case "cat":
		if len(words) > 1 && !(len(words) == 2 && words[1] == "-") {
			return nil // files: unknown text
		}
		return stdinTexts(st, src)
	case "echo":
		rest := words[1:]
		for len(rest) > 0 && len(rest[0]) > 1 && strings.Trim(rest[0], "neE") == "-" {
			rest = rest[1:]
		}
		return []string{strings.Join(rest, " ")}
	case "printf":
		return []string{strings.ReplaceAll(strings.Join(words[1:], " "), `\n`, "\n")}
	}
	return nil
}
