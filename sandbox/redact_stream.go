package sandbox

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"regexp/syntax"
	"sync"
	"unicode"
	"unicode/utf8"
)

// A command's output is redacted as it streams, before the bash tool cuts
// its 50 KB tail window, spills the full output or streams partial results:
// redacting only the cut text would leave the part of a secret the window
// kept.

// unboundedMatch is how far back the stream holds bytes for a pattern whose
// matches have no length bound (ghp_\w+): a match longer than this that
// starts in a write and has not ended at its end can be split and only
// partly redacted. Bound patterns ({36}) to make that impossible.
const unboundedMatch = 4096

// maxHeldMatch bounds how long a match of an unbounded pattern still growing
// at the end of the output seen so far is held back before it is redacted
// as it is.
const maxHeldMatch = 1 << 20

// streamStart describes where a secret's match can start and how long it
// can be: prefix is a literal every match starts with ("" when unknown),
// maxLen the longest match in bytes (unboundedMatch for unbounded ones).
type streamStart struct {
	prefix    string
	maxLen    int
	unbounded bool
}

// streamStarts lists the literals' and the patterns' starts.
func streamStarts(lits, patterns []string) []streamStart {
	var out []streamStart
	for _, l := range lits {
		out = append(out, streamStart{prefix: l, maxLen: len(l)})
	}
	for _, pat := range patterns {
		re := regexp.MustCompile(pat) // compiled before
		prefix, _ := re.LiteralPrefix()
		n, ok := -1, false
		if sre, err := syntax.Parse(pat, syntax.Perl); err == nil {
			n, ok = maxMatchLen(sre.Simplify())
		}
		s := streamStart{prefix: prefix, maxLen: n}
		if !ok || n > unboundedMatch {
			s.maxLen, s.unbounded = unboundedMatch, true
		}
		out = append(out, s)
	}
	return out
}

// maxMatchLen is the longest text in bytes re can match, and false when
// that has no bound.
func maxMatchLen(re *syntax.Regexp) (int, bool) {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary, syntax.OpNoMatch:
		return 0, true
	case syntax.OpLiteral:
		n := 0
		for _, r := range re.Rune {
			n += runeMaxLen(r, re.Flags&syntax.FoldCase != 0)
		}
		return n, true
	case syntax.OpCharClass:
		n := 0
		for i := 0; i+1 < len(re.Rune); i += 2 {
			n = max(n, utf8.RuneLen(min(re.Rune[i+1], unicode.MaxRune)))
		}
		return max(n, 1), true
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return utf8.UTFMax, true
	case syntax.OpCapture:
		return maxMatchLen(re.Sub[0])
	case syntax.OpQuest:
		return maxMatchLen(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus:
		return 0, false
	case syntax.OpRepeat:
		if re.Max < 0 {
			return 0, false
		}
		n, ok := maxMatchLen(re.Sub[0])
		return n * re.Max, ok
	case syntax.OpConcat:
		total := 0
		for _, s := range re.Sub {
			n, ok := maxMatchLen(s)
			if !ok {
				return 0, false
			}
			total += n
		}
		return total, true
	case syntax.OpAlternate:
		best := 0
		for _, s := range re.Sub {
			n, ok := maxMatchLen(s)
			if !ok {
				return 0, false
			}
			best = max(best, n)
		}
		return best, true
	}
	return 0, false
}

// runeMaxLen is r's UTF-8 length, or with case folding the longest of its
// fold orbit ('k' also matches the 3-byte Kelvin sign).
func runeMaxLen(r rune, fold bool) int {
	n := max(utf8.RuneLen(r), 1)
	if fold {
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			n = max(n, utf8.RuneLen(f))
		}
	}
	return n
}

// redactWriter redacts a byte stream on its way to w. It holds back the
// tail a match could still start in — from the earliest place, within the
// longest match (plus one byte, so word-boundary and end assertions see
// what follows) of the end, where a secret's literal start or an unknown
// start could be — and writes the rest with every match replaced. A match
// that starts before the held tail ends inside what has been seen, so it is
// found whole; no part of a secret (of a pattern with a length bound up to
// unboundedMatch) reaches w.
//
// Held bytes are written once decided, or by flush when the command has
// ended. So a live view of a command's output lags by at most the longest
// secret (unboundedMatch for an unbounded pattern) while redaction is on.
type redactWriter struct {
	mu      sync.Mutex
	r       *redactor
	w       io.Writer
	buf     []byte // held bytes, then the write being processed
	out     []byte
	flushed bool
}

func (r *redactor) writer(w io.Writer) *redactWriter {
	return &redactWriter{r: r, w: w}
}

// Write redacts p as part of the stream (Write does not retain p).
func (rw *redactWriter) Write(p []byte) (int, error) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.flushed {
		// Output after the end (not expected): redacted on its own.
		if _, err := rw.emit(p, len(p), true); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	rw.buf = append(rw.buf, p...)
	cut, err := rw.emit(rw.buf, rw.holdFrom(), false)
	rw.buf = rw.buf[:copy(rw.buf, rw.buf[cut:])]
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// flush writes the held bytes, redacted, as the end of the stream.
func (rw *redactWriter) flush() error {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	rw.flushed = true
	_, err := rw.emit(rw.buf, len(rw.buf), true)
	rw.buf = nil
	return err
}

// emit writes buf up to hold with its matches replaced (a match starting
// before hold is replaced whole) and returns where the unwritten rest
// starts. Unless the stream ended, a match of an unbounded pattern still
// growing at buf's end is held too, up to maxHeldMatch.
func (rw *redactWriter) emit(buf []byte, hold int, ended bool) (int, error) {
	out := rw.out[:0]
	pos := 0
	for _, m := range rw.r.re.FindAllIndex(buf, -1) {
		if m[0] >= hold {
			break
		}
		if !ended && m[1] == len(buf) && rw.r.unbounded && len(buf)-m[0] <= maxHeldMatch {
			hold = m[0]
			break
		}
		out = append(append(out, buf[pos:m[0]]...), Redacted...)
		pos = m[1]
	}
	cut := max(pos, hold)
	out = append(out, buf[pos:cut]...)
	rw.out = out
	if len(out) == 0 {
		return cut, nil
	}
	_, err := rw.w.Write(out)
	return cut, err
}

// holdFrom is where the held tail of rw.buf starts.
func (rw *redactWriter) holdFrom() int {
	n := len(rw.buf)
	hold := n
	for _, s := range rw.r.starts {
		from := max(0, n-s.maxLen)
		if from >= hold {
			continue
		}
		if s.prefix == "" {
			hold = from
			continue
		}
		for i := from; i < hold; i++ {
			if hasPrefixPart(rw.buf[i:], s.prefix) {
				hold = i
				break
			}
		}
	}
	return hold
}

// hasPrefixPart is whether b starts with prefix, or is a start of it.
func hasPrefixPart(b []byte, prefix string) bool {
	k := min(len(b), len(prefix))
	return string(b[:k]) == prefix[:k]
}

// redactOutput is the bash tool's output filter (tools.Options.Output):
// under a call the policy's redaction marked ([withStreamRedaction]) the
// command's output is redacted as it streams, before the tool sees it.
func redactOutput(ctx context.Context, w io.Writer) io.WriteCloser {
	r := streamRedaction(ctx)
	if r == nil {
		return nil
	}
	return flushCloser{r.writer(w)}
}

// flushCloser writes the held bytes on Close.
type flushCloser struct{ *redactWriter }

func (f flushCloser) Close() error {
	if err := f.flush(); err != nil {
		return fmt.Errorf("sandbox: redacting output: %w", err)
	}
	return nil
}

type streamRedactKey struct{}

// withStreamRedaction marks ctx so the bash tool's filter redacts the
// output of the commands run under it (see [redactOutput]).
func withStreamRedaction(ctx context.Context, r *redactor) context.Context {
	return context.WithValue(ctx, streamRedactKey{}, r)
}

func streamRedaction(ctx context.Context) *redactor {
	r, _ := ctx.Value(streamRedactKey{}).(*redactor)
	return r
}
