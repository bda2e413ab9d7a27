package search

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"unicode"
)

// PatternError is an invalid grep pattern. Its text is the one fixed message
// the grep tool shows on every backend: "regex parse error: <detail>", where
// detail is Go's description of the problem (ripgrep's own text is a
// multi-line diagram that differs between versions).
type PatternError struct {
	Pattern string
	Detail  string
}

func (e *PatternError) Error() string { return "regex parse error: " + e.Detail }

// Unwrap makes errors.Is(err, ops.ErrBadPattern) hold.
func (e *PatternError) Unwrap() error { return errBadPattern }

// matcher reports whether a line (without its "\n") contains a match.
type matcher interface {
	Match(line []byte) bool
}

// compilePattern builds the line matcher for a query, in ripgrep's dialect:
// \d \w \s and their negations are Unicode classes, \b and \B are Unicode
// word boundaries (Go's regexp has ASCII ones, so a pattern using them runs
// on a small NFA of our own, see nfa.go), ignoreCase is Unicode simple case
// folding, literal quotes every metacharacter.
func compilePattern(pattern string, ignoreCase, literal bool) (matcher, error) {
	if literal {
		pattern = regexp.QuoteMeta(pattern)
	} else if _, err := syntax.Parse(pattern, syntax.Perl); err != nil {
		return nil, patternError(pattern, err)
	}
	translated, err := translatePerlClasses(pattern)
	if err != nil {
		return nil, &PatternError{Pattern: pattern, Detail: err.Error()}
	}
	if ignoreCase {
		translated = "(?i)" + translated
	}
	tree, err := syntax.Parse(translated, syntax.Perl)
	if err != nil {
		return nil, patternError(pattern, err)
	}
	if !literal && hasNewlineLiteral(tree) {
		// ripgrep searches line by line and refuses such a pattern.
		return nil, &PatternError{Pattern: pattern, Detail: `the literal '"\n"' is not allowed in a regex`}
	}
	if hasWordBoundary(tree) {
		return newNFA(tree)
	}
	re, err := regexp.Compile(translated)
	if err != nil {
		return nil, patternError(pattern, err)
	}
	return re, nil
}

// searcher is a compiled query: the exact line matcher and the means of
// finding candidate lines in a chunk without trying every line.
type searcher struct {
	m matcher
	// fast scans whole chunks of lines: the same expression in multi-line
	// mode (with \b and \B dropped), which finds every line match and
	// possibly more (a match may span lines), so each candidate is
	// verified. \A and \z mean "line start/end" line by line but not in a
	// chunk, so a pattern using them has none.
	fast *regexp.Regexp
	// pre, when the pattern has required literals, finds candidate lines
	// faster than fast (see prefilter); it applies with or without fast.
	pre *prefilter
}

// compileSearch compiles a query for the engine.
func compileSearch(pattern string, ignoreCase, literal bool) (*searcher, error) {
	m, err := compilePattern(pattern, ignoreCase, literal)
	if err != nil {
		return nil, err
	}
	s := &searcher{m: m}
	src := pattern
	if literal {
		src = regexp.QuoteMeta(pattern)
	}
	src, err = translatePerlClasses(src)
	if err != nil {
		return s, nil
	}
	if ignoreCase {
		src = "(?i)" + src
	}
	if tree, err := syntax.Parse(src, syntax.Perl); err == nil {
		s.pre = newPrefilter(tree)
	}
	tree, err := syntax.Parse("(?m)"+src, syntax.Perl)
	if err != nil || hasTextAnchor(tree) {
		return s, nil
	}
	if fast, err := regexp.Compile(stripBoundaries(tree).String()); err == nil {
		s.fast = fast
	}
	return s, nil
}

func hasTextAnchor(re *syntax.Regexp) bool {
	if re.Op == syntax.OpBeginText || re.Op == syntax.OpEndText {
		return true
	}
	for _, s := range re.Sub {
		if hasTextAnchor(s) {
			return true
		}
	}
	return false
}

func patternError(pattern string, err error) error {
	detail := err.Error()
	if se, ok := err.(*syntax.Error); ok {
		detail = fmt.Sprintf("%s: `%s`", se.Code, se.Expr)
	}
	return &PatternError{Pattern: pattern, Detail: detail}
}

func hasNewlineLiteral(re *syntax.Regexp) bool {
	if re.Op == syntax.OpLiteral {
		for _, r := range re.Rune {
			if r == '\n' {
				return true
			}
		}
	}
	for _, s := range re.Sub {
		if hasNewlineLiteral(s) {
			return true
		}
	}
	return false
}

func hasWordBoundary(re *syntax.Regexp) bool {
	if re.Op == syntax.OpWordBoundary || re.Op == syntax.OpNoWordBoundary {
		return true
	}
	for _, s := range re.Sub {
		if hasWordBoundary(s) {
			return true
		}
	}
	return false
}

// Unicode definitions of ripgrep's Perl classes (Rust regex, Unicode mode).
func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsMark(r) || unicode.Is(unicode.Nd, r) ||
		unicode.Is(unicode.Pc, r) || unicode.Is(unicode.Nl, r) ||
		unicode.Is(unicode.Other_Alphabetic, r) || unicode.Is(unicode.Join_Control, r)
}

func isSpaceRune(r rune) bool { return unicode.Is(unicode.White_Space, r) }

var (
	wordItems  = `\p{L}\p{M}\p{Nd}\p{Pc}\p{Nl}` + tableItems(unicode.Other_Alphabetic) + tableItems(unicode.Join_Control)
	spaceItems = tableItems(unicode.White_Space)

	notWordOnce, notSpaceOnce   sync.Once
	notWordItems, notSpaceItems string
)

// tableItems writes a range table as class items.
func tableItems(t *unicode.RangeTable) string {
	var b strings.Builder
	for _, r := range t.R16 {
		writeRanges(&b, rune(r.Lo), rune(r.Hi), rune(r.Stride))
	}
	for _, r := range t.R32 {
		writeRanges(&b, rune(r.Lo), rune(r.Hi), rune(r.Stride))
	}
	return b.String()
}

func writeRanges(b *strings.Builder, lo, hi, stride rune) {
	if stride == 1 {
		fmt.Fprintf(b, `\x{%x}-\x{%x}`, lo, hi)
		return
	}
	for r := lo; r <= hi; r += stride {
		fmt.Fprintf(b, `\x{%x}`, r)
	}
}

// complementItems lists, as class items, every rune for which in is false.
// Only needed for \W and \S inside a bracketed class, so computed lazily.
func complementItems(in func(rune) bool) string {
	var b strings.Builder
	start := rune(-1)
	for r := rune(0); r <= unicode.MaxRune+1; r++ {
		out := r <= unicode.MaxRune && !in(r)
		if out && start < 0 {
			start = r
		} else if !out && start >= 0 {
			fmt.Fprintf(&b, `\x{%x}-\x{%x}`, start, r-1)
			start = -1
		}
	}
	return b.String()
}

// translatePerlClasses rewrites \d \D \w \W \s \S to Unicode classes, inside
// and outside bracketed classes; everything else is copied.
func translatePerlClasses(p string) (string, error) {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			n := p[i+1]
			if n == 'Q' {
				// \Q...\E: copied verbatim.
				end := strings.Index(p[i+2:], `\E`)
				if end < 0 {
					b.WriteString(p[i:])
					return b.String(), nil
				}
				b.WriteString(p[i : i+2+end+2])
				i += 2 + end + 1
				continue
			}
			if s, ok := perlClass(n, inClass); ok {
				b.WriteString(s)
				i++
				continue
			}
			b.WriteByte(c)
			b.WriteByte(n)
			i++
		case c == '[' && !inClass:
			inClass = true
			b.WriteByte(c)
			if i+1 < len(p) && p[i+1] == '^' {
				b.WriteByte('^')
				i++
			}
			// A "]" first in the class is a literal.
			if i+1 < len(p) && p[i+1] == ']' {
				b.WriteString(`\]`)
				i++
			}
		case c == '[' && inClass && i+1 < len(p) && p[i+1] == ':':
			// A POSIX class, copied for Go to check; without ":]" the "["
			// is a literal, as in Go's parser.
			end := strings.Index(p[i:], ":]")
			if end < 0 {
				b.WriteByte(c)
				continue
			}
			b.WriteString(p[i : i+end+2])
			i += end + 1
		case c == ']' && inClass:
			inClass = false
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

func perlClass(c byte, inClass bool) (string, bool) {
	wrap := func(items string, neg bool) string {
		if neg {
			return "[^" + items + "]"
		}
		return "[" + items + "]"
	}
	switch c {
	case 'd':
		return `\p{Nd}`, true
	case 'D':
		return `\P{Nd}`, true
	case 'w':
		if inClass {
			return wordItems, true
		}
		return wrap(wordItems, false), true
	case 'W':
		if inClass {
			notWordOnce.Do(func() { notWordItems = complementItems(isWordRune) })
			return notWordItems, true
		}
		return wrap(wordItems, true), true
	case 's':
		if inClass {
			return spaceItems, true
		}
		return wrap(spaceItems, false), true
	case 'S':
		if inClass {
			notSpaceOnce.Do(func() { notSpaceItems = complementItems(isSpaceRune) })
			return notSpaceItems, true
		}
		return wrap(spaceItems, true), true
	}
	return "", false
}
