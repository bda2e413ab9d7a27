package search

import (
	"bufio"
	"bytes"
	"context"
	"path"
	"regexp"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// verdict is the outcome of matching a path against a set of rules.
type verdict int8

const (
	none      verdict = iota // no rule matched
	ignored                  // excluded
	whitelist                // explicitly included ("!" in an ignore file, a plain --glob)
)

// rule is one line of an ignore file (or one --glob).
type rule struct {
	re      *regexp.Regexp
	negated bool // "!" prefix
	dirOnly bool // trailing "/"
}

// ruleSet is the compiled content of one ignore file, matched against paths
// relative to base (an absolute directory).
type ruleSet struct {
	base  string
	rules []rule
}

// parseRule compiles one gitignore line the way the ignore crate does
// (ripgrep and fd share it): "#" comments, trailing spaces trimmed unless
// escaped, "!" negates, a leading "/" or any inner "/" anchors the pattern to
// the file's directory, a trailing "/" matches directories only, a pattern
// without "/" matches the base name at any depth, and "x/**" matches only
// what is inside x. ok is false for blank lines and comments.
func parseRule(line string) (r rule, ok bool, err error) {
	orig := line
	if strings.HasPrefix(line, "#") {
		return rule{}, false, nil
	}
	if !strings.HasSuffix(line, `\ `) {
		line = strings.TrimRight(line, " \t\r")
	}
	if line == "" {
		return rule{}, false, nil
	}
	absolute := false
	if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
		line = line[1:]
		absolute = strings.HasPrefix(line, "/")
	} else {
		if strings.HasPrefix(line, "!") {
			r.negated = true
			line = line[1:]
		}
		if strings.HasPrefix(line, "/") {
			line = line[1:]
			absolute = true
		}
	}
	if strings.HasSuffix(line, "/") {
		r.dirOnly = true
		line = strings.TrimSuffix(line, "/")
		line = strings.TrimSuffix(line, `\`)
	}
	if !absolute && !strings.Contains(line, "/") && !strings.HasPrefix(line, "**/") {
		line = "**/" + line
	}
	if strings.HasSuffix(line, "/**") {
		line += "/*"
	}
	src, err := globRegexp(line, false)
	if err != nil {
		if ge, ok := err.(*GlobError); ok {
			ge.Glob = orig // report the line as written
		}
		return rule{}, false, err
	}
	r.re, err = regexp.Compile(src)
	if err != nil {
		return rule{}, false, &GlobError{Glob: orig, Detail: err.Error()}
	}
	return r, true, nil
}

// parseRules compiles an ignore file's content. Invalid lines are skipped,
// as ripgrep does (it reports them on stderr and goes on).
func parseRules(base string, data []byte) *ruleSet {
	rs := &ruleSet{base: base}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	first := true
	for sc.Scan() {
		line := sc.Text()
		if first {
			line = strings.TrimPrefix(line, "\ufeff")
			first = false
		}
		if r, ok, err := parseRule(line); err == nil && ok {
			rs.rules = append(rs.rules, r)
		}
	}
	return rs
}

// match returns the verdict of the last rule matching abs (the last line
// wins in gitignore).
func (rs *ruleSet) match(abs string, isDir bool) verdict {
	if rs == nil || len(rs.rules) == 0 {
		return none
	}
	rel, ok := relTo(rs.base, abs)
	if !ok {
		return none
	}
	for i := len(rs.rules) - 1; i >= 0; i-- {
		r := &rs.rules[i]
		if r.dirOnly && !isDir {
			continue
		}
		if r.re.MatchString(rel) {
			if r.negated {
				return whitelist
			}
			return ignored
		}
	}
	return none
}

// relTo returns p relative to dir, or false when p is not below dir.
func relTo(dir, p string) (string, bool) {
	if dir == "/" {
		return strings.TrimPrefix(p, "/"), p != "/"
	}
	if !strings.HasPrefix(p, dir) || len(p) <= len(dir) || p[len(dir)] != '/' {
		return "", false
	}
	return p[len(dir)+1:], true
}

// dirRules is what one directory contributes to the ignore stack.
type dirRules struct {
	custom    *ruleSet // .rgignore (ripgrep) or .fdignore (fd)
	ignore    *ruleSet // .ignore
	gitignore *ruleSet // .gitignore
	exclude   *ruleSet // .git/info/exclude, only in a directory holding .git
	hasGit    bool     // a .git entry exists here
}

// readRules loads dir's ignore files. names lists which entries exist (nil:
// unknown, so every candidate is tried).
func readRules(ctx context.Context, fsys ops.FS, dir, customName string, names map[string]bool) *dirRules {
	d := &dirRules{}
	load := func(name string) *ruleSet {
		if names != nil && !names[name] {
			return nil
		}
		data, err := ops.ReadFile(ctx, fsys, path.Join(dir, name))
		if err != nil {
			return nil
		}
		return parseRules(dir, data)
	}
	d.custom = load(customName)
	d.ignore = load(".ignore")
	d.gitignore = load(".gitignore")
	if names != nil {
		d.hasGit = names[".git"]
	} else if _, err := fsys.Lstat(ctx, path.Join(dir, ".git")); err == nil {
		d.hasGit = true
	}
	if d.hasGit {
		if data, err := ops.ReadFile(ctx, fsys, path.Join(dir, ".git", "info", "exclude")); err == nil {
			d.exclude = parseRules(dir, data)
		}
	}
	if d.custom == nil && d.ignore == nil && d.gitignore == nil && d.exclude == nil && !d.hasGit {
		return nil
	}
	return d
}

// ignoreStack holds the rules of every directory from the file system root
// down to the directory being walked, outermost first.
type ignoreStack struct {
	levels     []*dirRules
	requireGit bool // ripgrep: .gitignore only inside a git repository
}

func (s *ignoreStack) push(d *dirRules) *ignoreStack {
	levels := make([]*dirRules, len(s.levels), len(s.levels)+1)
	copy(levels, s.levels)
	return &ignoreStack{levels: append(levels, d), requireGit: s.requireGit}
}

// match applies the ignore crate's precedence: the custom file beats .ignore,
// which beats .gitignore, which beats .git/info/exclude; within one kind the
// deepest directory with a matching rule decides. Git rules stop at the
// innermost repository root, and with requireGit they apply only inside a
// repository.
func (s *ignoreStack) match(abs string, isDir bool) verdict {
	anyGit := !s.requireGit
	if !anyGit {
		for _, d := range s.levels {
			if d != nil && d.hasGit {
				anyGit = true
				break
			}
		}
	}
	mCustom, mIgnore, mGit, mExclude := none, none, none, none
	sawGit := false
	for i := len(s.levels) - 1; i >= 0; i-- {
		d := s.levels[i]
		if d == nil {
			continue
		}
		if mCustom == none {
			mCustom = d.custom.match(abs, isDir)
		}
		if mIgnore == none {
			mIgnore = d.ignore.match(abs, isDir)
		}
		if anyGit && !sawGit {
			if mGit == none {
				mGit = d.gitignore.match(abs, isDir)
			}
			if mExclude == none {
				mExclude = d.exclude.match(abs, isDir)
			}
		}
		sawGit = sawGit || d.hasGit
	}
	for _, m := range []verdict{mCustom, mIgnore, mGit, mExclude} {
		if m != none {
			return m
		}
	}
	return none
}
