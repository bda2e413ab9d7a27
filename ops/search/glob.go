package search

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// GlobError is an invalid glob (a find pattern or a grep --glob). Its text
// is globset's, as fd and ripgrep print it after their own prefix:
// "error parsing glob '<glob>': <detail>".
type GlobError struct {
	Glob   string
	Detail string
}

func (e *GlobError) Error() string { return "error parsing glob '" + e.Glob + "': " + e.Detail }

// Unwrap makes errors.Is(err, ops.ErrBadPattern) hold.
func (e *GlobError) Unwrap() error { return errBadPattern }

// globRegexp translates a glob to an anchored regular expression with the
// semantics of Rust's globset as ripgrep and fd configure it
// (literal_separator and backslash escapes): "*" and "?" never match "/",
// "[...]" is a class ("[!...]" or "[^...]" negated), "**/" at the start
// matches any number of leading directories, "/**/" in the middle any number
// of directories (zero included), "/**" at the end everything below, and a
// "**" anywhere else is a plain "*", and "{a,b}" is an alternation.
func globRegexp(glob string, foldCase bool) (string, error) {
	var b strings.Builder
	b.WriteString("(?s)")
	if foldCase {
		b.WriteString("(?i)")
	}
	b.WriteString("^")
	i := 0
	inAlt := false
	for i < len(glob) {
		c := glob[i]
		switch c {
		case '{':
			if inAlt {
				return "", &GlobError{Glob: glob, Detail: "nested alternate groups are not allowed"}
			}
			inAlt = true
			b.WriteString("(?:")
			i++
		case '}':
			if !inAlt {
				b.WriteString(`\}`)
			} else {
				inAlt = false
				b.WriteString(")")
			}
			i++
		case ',':
			if inAlt {
				b.WriteString("|")
			} else {
				b.WriteString(",")
			}
			i++
		case '*':
			if i+1 < len(glob) && glob[i+1] == '*' {
				atStart := i == 0
				afterSlash := i > 0 && glob[i-1] == '/'
				end := i+2 == len(glob)
				beforeSlash := i+2 < len(glob) && glob[i+2] == '/'
				switch {
				case atStart && end:
					b.WriteString(".*")
					i += 2
					continue
				case atStart && beforeSlash:
					b.WriteString("(?:.*/)?")
					i += 3
					continue
				case afterSlash && end:
					// The "/" is already written: "a/**" matches below a.
					b.WriteString(".*")
					i += 2
					continue
				case afterSlash && beforeSlash:
					// "a/**/b": the written "/" plus zero or more directories.
					b.WriteString("(?:.*/)?")
					i += 3
					continue
				}
				b.WriteString("[^/]*")
				i += 2
				continue
			}
			b.WriteString("[^/]*")
			i++
		case '?':
			b.WriteString("[^/]")
			i++
		case '[':
			n, cls, detail := globClass(glob[i:])
			if detail != "" {
				return "", &GlobError{Glob: glob, Detail: detail}
			}
			b.WriteString(cls)
			i += n
		case '\\':
			if i+1 == len(glob) {
				return "", &GlobError{Glob: glob, Detail: "dangling '\\'"}
			}
			r, w := utf8.DecodeRuneInString(glob[i+1:])
			b.WriteString(regexp.QuoteMeta(string(r)))
			i += 1 + w
		default:
			r, w := utf8.DecodeRuneInString(glob[i:])
			b.WriteString(regexp.QuoteMeta(string(r)))
			i += w
		}
	}
	if inAlt {
		return "", &GlobError{Glob: glob, Detail: "unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)"}
	}
	b.WriteString("$")
	return b.String(), nil
}

// globClass translates the class starting at s[0] == '['. It returns the
// number of bytes consumed. Every member is written as \x{...}, so no
// character needs class-specific escaping.
func globClass(s string) (int, string, string) {
	var b strings.Builder
	b.WriteString("[")
	i := 1
	if i < len(s) && (s[i] == '!' || s[i] == '^') {
		b.WriteString("^")
		i++
	}
	first := true
	for i < len(s) {
		if s[i] == ']' && !first {
			b.WriteString("]")
			return i + 1, b.String(), ""
		}
		first = false
		lo, w := classRune(s[i:])
		i += w
		if i+1 < len(s) && s[i] == '-' && s[i+1] != ']' {
			hi, w2 := classRune(s[i+1:])
			i += 1 + w2
			if hi < lo {
				return 0, "", fmt.Sprintf("invalid range; '%c' > '%c'", lo, hi)
			}
			fmt.Fprintf(&b, `\x{%x}-\x{%x}`, lo, hi)
			continue
		}
		fmt.Fprintf(&b, `\x{%x}`, lo)
	}
	return 0, "", "unclosed character class; missing ']'"
}

func classRune(s string) (rune, int) {
	if s[0] == '\\' && len(s) > 1 {
		r, w := utf8.DecodeRuneInString(s[1:])
		return r, 1 + w
	}
	return utf8.DecodeRuneInString(s)
}

// globEscape escapes the glob metacharacters of a literal path (pi escapes
// the search root this way before prefixing it to a path pattern).
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[', ']', '{', '}', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
