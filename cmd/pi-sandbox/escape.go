package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// escapeControls makes text from a target safe to show on a terminal:
// control characters (C0 but the tab, and the newline when keepNewline is
// set; DEL) become \n, \r or \xHH, C1 controls (U+0080–U+009F) \uHHHH,
// and bytes that are not UTF-8 \xHH. A process's argv, a file name or a
// tool's output can then never move the cursor, retitle the window or
// clear the screen of whoever reads pi-sandbox's human-readable output.
func escapeControls(s string, keepNewline bool) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if needsEscape(r, n, keepNewline) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case !needsEscape(r, n, keepNewline):
			b.WriteString(s[i : i+n])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r >= 0x80 && n > 1:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		}
		i += n
	}
	return b.String()
}

func needsEscape(r rune, n int, keepNewline bool) bool {
	switch {
	case r == utf8.RuneError && n == 1:
		return true
	case r == '\t', r == '\n' && keepNewline:
		return false
	}
	return r < 0x20 || (r >= 0x7f && r <= 0x9f)
}

// escapingWriter writes through escapeControls, keeping newlines: for
// stderr, where error messages carry text from the target. Each Write is
// escaped on its own (fmt writes a message at once).
type escapingWriter struct{ w io.Writer }

func (e escapingWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(e.w, escapeControls(string(p), true)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// escapeJSONControls rewrites the characters encoding/json leaves raw that
// a terminal may still act on — DEL and the C1 controls U+0080–U+009F — as
// JSON escapes (\u007f, \u0080 …). encoding/json escapes every other
// control character and replaces invalid UTF-8 already; in its output
// these code points occur only inside strings, so the result is the same
// JSON value.
func escapeJSONControls(b []byte) []byte {
	need := false
	for i := 0; i < len(b); i++ {
		if b[i] == 0x7f || (b[i] == 0xc2 && i+1 < len(b) && b[i+1] >= 0x80 && b[i+1] <= 0x9f) {
			need = true
			break
		}
	}
	if !need {
		return b
	}
	out := make([]byte, 0, len(b)+32)
	for i := 0; i < len(b); i++ {
		switch {
		case b[i] == 0x7f:
			out = append(out, `\u007f`...)
		case b[i] == 0xc2 && i+1 < len(b) && b[i+1] >= 0x80 && b[i+1] <= 0x9f:
			out = fmt.Appendf(out, `\u%04x`, b[i+1])
			i++
		default:
			out = append(out, b[i])
		}
	}
	return out
}
