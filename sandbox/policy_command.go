package sandbox

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// BlockedPrefix starts the text of a call blocked by the command policy.
const BlockedPrefix = "Command blocked by policy: "

type compiledRule struct {
	Rule
	re *regexp.Regexp
}

func compileRule(r Rule) (compiledRule, error) {
	switch {
	case r.Prefix != "" && r.Regex != "":
		return compiledRule{}, fmt.Errorf("sandbox: policy: a rule has both prefix %q and regex %q", r.Prefix, r.Regex)
	case r.Regex != "":
		re, err := regexp.Compile(r.Regex)
		if err != nil {
			return compiledRule{}, fmt.Errorf("sandbox: policy: rule regex: %w", err)
		}
		return compiledRule{Rule: r, re: re}, nil
	case strings.TrimSpace(r.Prefix) != "":
		return compiledRule{Rule: r}, nil
	}
	return compiledRule{}, fmt.Errorf("sandbox: policy: a rule needs a prefix or a regex")
}

func (r compiledRule) match(cmd string) bool {
	if r.re != nil {
		return r.re.MatchString(cmd)
	}
	p := strings.TrimLeftFunc(r.Prefix, unicode.IsSpace)
	if !strings.HasPrefix(cmd, p) {
		return false
	}
	if len(cmd) == len(p) || strings.HasSuffix(p, " ") {
		return true
	}
	next := cmd[len(p)]
	return next == ' ' || next == '\t'
}

type commandPolicy struct {
	allow, deny []compiledRule
}

func compileCommands(c CommandRules) (*commandPolicy, error) {
	cp := &commandPolicy{}
	for _, r := range c.Allow {
		cr, err := compileRule(r)
		if err != nil {
			return nil, err
		}
		cp.allow = append(cp.allow, cr)
	}
	for _, r := range c.Deny {
		cr, err := compileRule(r)
		if err != nil {
			return nil, err
		}
		cp.deny = append(cp.deny, cr)
	}
	if len(cp.allow) == 0 && len(cp.deny) == 0 {
		return nil, nil
	}
	return cp, nil
}

// check returns the reason a command line is blocked, or "".
func (cp *commandPolicy) check(line string) string {
	cmds, err := parseCommands(line)
	if err != nil {
		return cp.checkSplit(line)
	}
	for _, r := range cp.deny {
		if cp.denies(r, line, cmds, 0) {
			return blockReason(r.Reason, "deny "+r.String())
		}
	}
	if len(cp.allow) == 0 {
		return ""
	}
	for _, c := range cmds {
		if len(c.words) == 0 {
			continue // assignments or redirections only: nothing runs
		}
		if !slices.ContainsFunc(cp.allow, func(r compiledRule) bool { return r.match(c.written) }) {
			return blockReason("", fmt.Sprintf("%q matches no allow rule", c.written))
		}
	}
	return ""
}

// maxLineDepth bounds the nesting of command lines run by wrappers
// (sh -c "sh -c '...'") that deny rules follow.
const maxLineDepth = 8

// denies is whether deny rule r matches line (a regex, the whole line) or
// one of its parsed commands cmds: the command's words, and the words from
// each command it runs through wrappers on; a command line a wrapper runs
// (sh -c LINE, eval WORDS, env -S LINE, trap LINE) or a shell reads on
// stdin is checked in turn.
func (cp *commandPolicy) denies(r compiledRule, line string, cmds []shellCommand, depth int) bool {
	if r.re != nil && r.re.MatchString(line) {
		return true
	}
	for _, c := range cmds {
		starts, lines := commandStarts(c.words)
		if r.matchStarts(c.words, starts) {
			return true
		}
		lines = append(lines, c.lines...)
		for _, sub := range lines {
			subCmds, err := parseCommands(sub)
			if err != nil || depth >= maxLineDepth {
				if reason := (&commandPolicy{deny: []compiledRule{r}}).checkSplit(sub); reason != "" {
					return true
				}
				continue
			}
			if cp.denies(r, sub, subCmds, depth+1) {
				return true
			}
		}
	}
	return false
}

// maxRegexForms bounds the forms a deny regex is matched against (the
// first ones and the last, fully stripped, one): each match scans the whole
// form, so a line of thousands of "sudo"s would cost quadratic time.
// Prefix rules, which cost the prefix's length, see every form.
const maxRegexForms = 16

// matchStarts matches r against the words from each start on, joined by
// spaces, and with the first word's directory removed (/bin/rm as rm).
func (r compiledRule) matchStarts(words []string, starts []int) bool {
	for k, i := range starts {
		if r.re != nil && k >= maxRegexForms && k != len(starts)-1 {
			continue
		}
		if i >= len(words) {
			continue
		}
		if r.matchWords(words[i+1:], words[i]) {
			return true
		}
		if b := baseName(words[i]); b != words[i] && r.matchWords(words[i+1:], b) {
			return true
		}
	}
	return false
}

// matchWords matches r against first and rest joined by spaces; for a
// prefix rule only as much of it is joined as the prefix needs.
func (r compiledRule) matchWords(rest []string, first string) bool {
	need := len(r.Prefix) + 1
	var b strings.Builder
	b.WriteString(first)
	for _, w := range rest {
		if r.re == nil && b.Len() >= need {
			break
		}
		b.WriteByte(' ')
		b.WriteString(w)
	}
	return r.match(b.String())
}

// checkSplit is check for a line the parser refuses (bash may still run
// it): the line is split by hand into simple commands, too often rather
// than too rarely, and deny rules see each piece's words from every
// command start (after wrappers and their options) too.
func (cp *commandPolicy) checkSplit(line string) string {
	segs := simpleCommands(line)
	// Deny rules also see the line with quoting removed, so that
	// bash -c "rm -rf x" and r\m -rf x read as rm -rf x.
	denySegs := append(slices.Clone(segs), simpleCommands(unquote.Replace(line))...)
	for _, r := range cp.deny {
		hit := r.re != nil && r.re.MatchString(line)
		for _, s := range denySegs {
			if hit {
				break
			}
			words := splitWords(s)
			starts, _ := commandStarts(words)
			hit = r.matchForms(denyForms(s)) || r.matchStarts(words, starts)
		}
		if hit {
			return blockReason(r.Reason, "deny "+r.String())
		}
	}
	if len(cp.allow) == 0 {
		return ""
	}
	for _, s := range segs {
		if !slices.ContainsFunc(cp.allow, func(r compiledRule) bool { return r.match(s) }) {
			return blockReason("", fmt.Sprintf("%q matches no allow rule", s))
		}
	}
	return ""
}

func blockReason(custom, rule string) string {
	if custom != "" {
		return BlockedPrefix + custom
	}
	return BlockedPrefix + rule
}

// simpleCommands splits a shell line at control operators and substitution
// starts, without regard to quoting: splitting too often only makes allow
// rules stricter and deny rules see more.
func simpleCommands(line string) []string {
	fields := strings.FieldsFunc(line, func(r rune) bool {
		switch r {
		case ';', '&', '|', '\n', '\r', '(', ')', '`', '{', '}':
			return true
		}
		return false
	})
	var out []string
	for _, f := range fields {
		f = strings.TrimSuffix(strings.TrimSpace(f), "$")
		f = stripKeywords(strings.TrimSpace(f))
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

var shellKeywords = []string{"!", "if", "then", "else", "elif", "do", "while", "until", "fi", "done", "esac"}

func stripKeywords(s string) string {
	for {
		w, rest := firstWord(s)
		if w == "" || !slices.Contains(shellKeywords, w) {
			return s
		}
		s = rest
	}
}

var unquote = strings.NewReplacer(`"`, "", "'", "", `\`, "")

// denyForms lists s and s without leading assignments, wrappers and their
// options, so "sudo -E FOO=1 rm -rf x" also reads as "rm -rf x" (for
// checkSplit).
func denyForms(s string) []string {
	forms := []string{s}
	for {
		w, rest := firstWord(s)
		switch {
		case w == "":
			return forms
		case strings.Contains(w, "=") && !strings.HasPrefix(w, "="),
			isWrapper(w):
			s = rest
			// Options of a wrapper (sudo -u x, timeout 5) are skipped
			// word by word below, as their own forms.
		case strings.HasPrefix(w, "-") && len(forms) > 1,
			len(forms) > 1 && isNumber(w):
			s = rest
		default:
			if w != baseName(w) {
				forms = append(forms, baseName(w)+strings.TrimPrefix(s, w))
			}
			return forms
		}
		if s != "" {
			forms = append(forms, s)
		}
	}
}

func (r compiledRule) matchForms(forms []string) bool {
	if r.re == nil || len(forms) <= maxRegexForms {
		return slices.ContainsFunc(forms, r.match)
	}
	return slices.ContainsFunc(forms[:maxRegexForms], r.match) || r.match(forms[len(forms)-1])
}

func firstWord(s string) (string, string) {
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	i := strings.IndexFunc(s, unicode.IsSpace)
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimLeftFunc(s[i:], unicode.IsSpace)
}

func baseName(w string) string {
	if i := strings.LastIndexByte(w, '/'); i >= 0 && i < len(w)-1 {
		return w[i+1:]
	}
	return w
}

func isNumber(w string) bool {
	return w != "" && strings.Trim(w, "0123456789.smhd") == ""
}

func isWrapper(w string) bool {
	_, ok := wrappers[baseName(w)]
	return ok
}

// splitWords splits a piece of a line checkSplit cut by hand into words at
// white space, without the redirections before the command (>/dev/null,
// 2>&1, > file).
func splitWords(s string) []string {
	words := strings.Fields(s)
	for len(words) > 0 {
		w := strings.TrimLeft(words[0], "0123456789")
		if w == "" || (w[0] != '<' && w[0] != '>') {
			break
		}
		words = words[1:]
		if strings.Trim(w, "<>&|") == "" && len(words) > 0 {
			words = words[1:] // the target: > file
		}
	}
	return words
}
