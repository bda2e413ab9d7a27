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
			hit = r.matchForms(denyForms(s))
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

var wrappers = []string{"sudo", "env", "command", "exec", "nohup", "time", "nice", "xargs", "builtin", "doas", "timeout", "stdbuf",
	"eval", "sh", "bash", "dash", "zsh", "ksh", "busybox"}

var unquote = strings.NewReplacer(`"`, "", "'", "", `\`, "")

// denyForms lists s and s without leading assignments, wrappers and their
// options, so "sudo -E FOO=1 rm -rf x" also reads as "rm -rf x".
func denyForms(s string) []string {
	forms := []string{s}
	for {
		w, rest := firstWord(s)
		switch {
		case w == "":
			return forms
		case strings.Contains(w, "=") && !strings.HasPrefix(w, "="),
			slices.Contains(wrappers, baseName(w)):
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

// maxRegexForms bounds the forms a deny regex is matched against (the
// first ones and the last, fully stripped, one): each match scans the whole
// form, so a line of thousands of "sudo"s would cost quadratic time.
// Prefix rules, which cost the prefix's length, see every form.
const maxRegexForms = 16

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
