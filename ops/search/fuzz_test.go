package search

import (
	"bytes"
	"errors"
	"regexp"
	"regexp/syntax"
	"slices"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// FuzzGlob: every glob either compiles to a valid regexp or fails with a
// *GlobError; gitignore lines never panic.
func FuzzGlob(f *testing.F) {
	for _, s := range []string{"*.ts", "src/**/*.go", "**/", "[!a-z]?", "{a,b}", "a\\*", "[", "{", "]", "/**", "x/**/y", "[]]", "[a-]", "!/b/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, g string) {
		src, err := globRegexp(g, false)
		if err != nil {
			var ge *GlobError
			if !errors.As(err, &ge) || !errors.Is(err, ops.ErrBadPattern) {
				t.Fatalf("%q: error %v is not a GlobError", g, err)
			}
		} else if _, err := regexp.Compile(src); err != nil {
			t.Fatalf("%q → %q does not compile: %v", g, src, err)
		}
		parseRule(g)
	})
}

// FuzzPattern: translating rg's Perl classes never turns a pattern Go
// accepts into one it rejects, and matching never panics.
func FuzzPattern(f *testing.F) {
	for _, s := range []string{`\d+`, `[\w-]`, `[^\W\d]`, `\bx\B`, `\Q\d\E`, `[[:alpha:]\s]`, `(?i)é\b`, `[]\S]`, `a|\b`, `\\w`} {
		f.Add(s, "café 123 ٣ x_y\u00a0z")
		f.Add(s, "a1\n\nb\rc\n_\u00e9\n")
	}
	// Required literals under case folding, with variants of other lengths
	// (K: the Kelvin sign, s: the long s, ß: ẞ).
	for _, s := range []string{`(?i)über`, `ÜBER|straße`, `(?i)func newreader`, `(?i)xyzzy_nomatch`, `(?i)k\w+s`, `(?i)strasse|ß`, `a(?i:b)c+`, `(x|yz)+\d`, `\bstraße\b`, `(?i)\Aüber`} {
		f.Add(s, "Über uns\nÜBER\nueber ÜBERALL über\nStraße STRASSE strasse\n\u212aeys \u017f ẞ\n")
		f.Add(s, "FUNC NewReader\nfunc newReader(\nxyzzy_NOMATCH\n\xc3\n\u212a\u017f\nabbc\nyz4")
	}
	f.Fuzz(func(t *testing.T, p, line string) {
		for _, ignoreCase := range []bool{false, true} {
			checkPattern(t, p, line, ignoreCase)
		}
	})
}

// checkPattern: a pattern Go accepts compiles (or is refused for a "\n"),
// and the candidate lines of a chunk are exactly its matching lines.
func checkPattern(t *testing.T, p, line string, ignoreCase bool) {
	t.Helper()
	_, goErr := syntax.Parse(p, syntax.Perl)
	sr, err := compileSearch(p, ignoreCase, false)
	if goErr == nil && err != nil {
		var pe *PatternError
		if !errors.As(err, &pe) || pe.Detail != `the literal '"\n"' is not allowed in a regex` {
			t.Fatalf("%q: Go accepts it, we reject it: %v", p, err)
		}
		return
	}
	if err != nil {
		if !errors.Is(err, ops.ErrBadPattern) {
			t.Fatalf("%q: error %v is not ErrBadPattern", p, err)
		}
		return
	}
	if sr.fast == nil && sr.pre == nil {
		return
	}
	// Scanning line as a chunk finds exactly the lines that match.
	chunk := []byte(line)
	var want []int
	for off := 0; off < len(chunk); {
		end := bytes.IndexByte(chunk[off:], '\n')
		next := off + end + 1
		if end < 0 {
			end, next = len(chunk)-off, len(chunk)
		}
		if sr.m.Match(chunk[off : off+end]) {
			want = append(want, off)
		}
		off = next
	}
	// With the prefilter (when the pattern has one) and without it.
	for _, s := range []*searcher{sr, {m: sr.m, fast: sr.fast}} {
		if s.fast == nil && s.pre == nil {
			continue
		}
		g := &grepper{searcher: s}
		if got := g.candidates(chunk); !slices.Equal(got, want) {
			t.Fatalf("%q (ignore case %v, prefilter %v) on %q: candidates %v, want %v", p, ignoreCase, s.pre != nil, line, got, want)
		}
	}
}
