package tools

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// Sizes of bash's bounded output state.
const (
	// rollingTailBytes is what the decoded tail is cut back to once it grows
	// past twice this size: 2 × maxBytes, as pi's OutputAccumulator does.
	rollingTailBytes = 2 * defaultMaxBytes
	// structuredCap bounds structuredContent.output: up to this size it is
	// the whole output, beyond it the first and last structuredCap/2 bytes.
	structuredCap = 1 << 20
)

// outputAccumulator is pi's OutputAccumulator: it decodes a byte stream
// incrementally, keeps global counts and only a rolling decoded tail, and
// hands raw bytes to a spill file once the output is too large to show whole.
// Memory stays bounded whatever the output size. It is not safe for
// concurrent use.
type outputAccumulator struct {
	maxLines, maxBytes int

	dec     utf8Decoder
	scratch []byte // decoded text of the current chunk

	tail            []byte // decoded, at most 2*rollingTailBytes
	tailAtLineStart bool   // the tail was cut right after a "\n" (or never cut)

	rawBytes       int64
	decodedBytes   int64
	completedLines int64
	openLine       bool
	lastLineBytes  int64 // bytes of the open line, 0 right after "\n"

	structured bashHeadTail

	// pending holds the raw chunks seen before the spill threshold was
	// crossed (at most maxBytes plus one chunk); newSpill opens the file.
	pending  [][]byte
	spill    spillSink
	newSpill func() spillSink
	finished bool
}

// spillSink receives the exact raw bytes of the output, in order.
type spillSink interface {
	write(p []byte)
	path() string
}

func newOutputAccumulator(maxLines, maxBytes int, newSpill func() spillSink) *outputAccumulator {
	return &outputAccumulator{
		maxLines:        maxLines,
		maxBytes:        maxBytes,
		tailAtLineStart: true,
		newSpill:        newSpill,
	}
}

// append adds a chunk of raw output. p is not retained.
func (a *outputAccumulator) append(p []byte) {
	if a.finished {
		return
	}
	a.rawBytes += int64(len(p))
	a.scratch = a.scratch[:0]
	a.dec.feed(p, &a.scratch)
	a.appendDecoded(a.scratch)
	if a.spill != nil || a.shouldSpill() {
		a.ensureSpill()
		if a.spill != nil {
			a.spill.write(p)
		}
	} else if len(p) > 0 {
		a.pending = append(a.pending, bytes.Clone(p))
	}
}

// skip counts output that was not given to append (a runner saved it in
// the target only, ops.SkippedOutput): the counts go on, the decoder
// starts afresh (the skipped bytes end between characters), the rolling
// and structured tails start again after it (the runner sends more than
// they keep after a skip).
func (a *outputAccumulator) skip(k ops.SkippedOutput) {
	if a.finished || k.Raw <= 0 {
		return
	}
	a.rawBytes += k.Raw
	a.decodedBytes += k.Decoded
	a.completedLines += k.Newlines
	if k.Newlines == 0 {
		a.lastLineBytes += k.LastLine
	} else {
		a.lastLineBytes = k.LastLine
	}
	a.openLine = a.lastLineBytes > 0
	a.dec = utf8Decoder{}
	a.tail = a.tail[:0]
	a.tailAtLineStart = !a.openLine
	a.structured.total += k.Decoded
	a.structured.tail = a.structured.tail[:0]
	if a.spill == nil && a.shouldSpill() {
		a.ensureSpill()
	}
}

// finish flushes the decoder: an incomplete sequence at the end of the
// output becomes U+FFFD.
func (a *outputAccumulator) finish() {
	if a.finished {
		return
	}
	a.finished = true
	a.scratch = a.scratch[:0]
	a.dec.flush(&a.scratch)
	a.appendDecoded(a.scratch)
	if a.shouldSpill() {
		a.ensureSpill()
	}
}

func (a *outputAccumulator) totalLines() int64 {
	if a.openLine {
		return a.completedLines + 1
	}
	return a.completedLines
}

func (a *outputAccumulator) shouldSpill() bool {
	return a.rawBytes > int64(a.maxBytes) || a.decodedBytes > int64(a.maxBytes) ||
		a.totalLines() > int64(a.maxLines)
}

func (a *outputAccumulator) ensureSpill() {
	if a.spill != nil || a.newSpill == nil {
		return
	}
	a.spill = a.newSpill()
	for _, c := range a.pending {
		a.spill.write(c)
	}
	a.pending = nil
}

// spillPath is the spill file's path, "" while there is none.
func (a *outputAccumulator) spillPath() string {
	if a.spill == nil {
		return ""
	}
	return a.spill.path()
}

func (a *outputAccumulator) appendDecoded(text []byte) {
	if len(text) == 0 {
		return
	}
	n := int64(len(text))
	a.decodedBytes += n
	a.appendTail(text)
	a.structured.add(text)

	newlines := bytes.Count(text, []byte{'\n'})
	if newlines == 0 {
		a.lastLineBytes += n
		a.openLine = true
		return
	}
	a.completedLines += int64(newlines)
	a.lastLineBytes = n - int64(bytes.LastIndexByte(text, '\n')) - 1
	a.openLine = a.lastLineBytes > 0
}

// appendTail appends text to the rolling tail. When the tail would exceed
// 2*rollingTailBytes, only its last rollingTailBytes are kept, moved forward
// to a character boundary — computed on tail+text without building it, so a
// huge chunk costs no more memory than the tail itself.
func (a *outputAccumulator) appendTail(text []byte) {
	total := len(a.tail) + len(text)
	if total <= 2*rollingTailBytes {
		a.tail = append(a.tail, text...)
		return
	}
	at := func(i int) byte {
		if i < len(a.tail) {
			return a.tail[i]
		}
		return text[i-len(a.tail)]
	}
	start := total - rollingTailBytes
	for start < total && at(start)&0xC0 == 0x80 {
		start++
	}
	a.tailAtLineStart = at(start-1) == '\n'
	if start >= len(a.tail) {
		a.tail = append(a.tail[:0], text[start-len(a.tail):]...)
		return
	}
	keep := copy(a.tail, a.tail[start:])
	a.tail = append(a.tail[:keep], text...)
}

// snapshotText is the tail as snapshots see it: when the tail was cut in the
// middle of a line, that partial first line is dropped, unless dropping it
// leaves nothing.
func (a *outputAccumulator) snapshotText() string {
	if a.tailAtLineStart {
		return string(a.tail)
	}
	if i := bytes.IndexByte(a.tail, '\n'); i >= 0 && i+1 < len(a.tail) {
		return string(a.tail[i+1:])
	}
	return string(a.tail)
}

// snapshot is truncateTail of the tail with truncated, truncatedBy and the
// totals taken from the global counts.
func (a *outputAccumulator) snapshot() truncation {
	t := truncateTail(a.snapshotText(), a.maxLines, a.maxBytes)
	totalLines := a.totalLines()
	truncated := totalLines > int64(a.maxLines) || a.decodedBytes > int64(a.maxBytes)
	by := byNone
	if truncated {
		by = t.TruncatedBy
		if by == byNone {
			by = byLines
			if a.decodedBytes > int64(a.maxBytes) {
				by = byBytes
			}
		}
	}
	t.Truncated = truncated
	t.TruncatedBy = by
	t.TotalLines = int(totalLines)
	t.TotalBytes = int(a.decodedBytes)
	t.MaxLines = a.maxLines
	t.MaxBytes = a.maxBytes
	return t
}

// bashHeadTail keeps the decoded output for structuredContent: all of it up to
// structuredCap, beyond that the first and the last structuredCap/2 bytes.
type bashHeadTail struct {
	head  []byte // the whole output until split, then its first half
	tail  []byte // after split: the latest output, at most structuredCap
	total int64
	split bool
}

func (h *bashHeadTail) add(text []byte) {
	const half = structuredCap / 2
	h.total += int64(len(text))
	if !h.split {
		if len(h.head)+len(text) <= structuredCap {
			h.head = append(h.head, text...)
			return
		}
		h.split = true
		if len(h.head) > half {
			h.tail = append(h.tail, h.head[half:]...)
			h.head = h.head[:half:half]
		} else {
			n := half - len(h.head)
			h.head = append(h.head, text[:n]...)
			text = text[n:]
		}
	}
	if len(text) >= half {
		h.tail = append(h.tail[:0], text[len(text)-half:]...)
		return
	}
	if len(h.tail)+len(text) > structuredCap {
		n := copy(h.tail, h.tail[len(h.tail)-(half-len(text)):])
		h.tail = h.tail[:n]
	}
	h.tail = append(h.tail, text...)
}

// text renders the structured output: the whole output, or the first half +
// "\n\n[... <n> bytes omitted ...]\n\n" + the last half, both cut at
// character boundaries.
func (h *bashHeadTail) text() string {
	if !h.split {
		return string(h.head)
	}
	const half = structuredCap / 2
	head := h.head
	if i := bashLastRuneStart(head); !utf8.FullRune(head[i:]) {
		head = head[:i]
	}
	tail := h.tail
	if len(tail) > half {
		tail = tail[len(tail)-half:]
	}
	for len(tail) > 0 && tail[0]&0xC0 == 0x80 {
		tail = tail[1:]
	}
	omitted := h.total - int64(len(head)) - int64(len(tail))
	return string(head) + "\n\n[... " + strconv.FormatInt(omitted, 10) + " bytes omitted ...]\n\n" + string(tail)
}

// bashLastRuneStart is the index of the first byte of the last (possibly
// incomplete) character of p, 0 for an empty p.
func bashLastRuneStart(p []byte) int {
	i := len(p) - 1
	for i > 0 && len(p)-i < utf8.UTFMax && p[i]&0xC0 == 0x80 {
		i--
	}
	return max(i, 0)
}
