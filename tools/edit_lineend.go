package tools

import (
	"strings"
)

// The BOM and line endings for edit (pi
// 1.6 behaviour). The file is decoded with decodeString (decode.go), as
// Node's buffer.toString("utf-8") does: pi edits the decoded string, so
// invalid bytes are written back as U+FFFD.

const utf8BOM = "\uFEFF"

// stripBOM splits a leading U+FEFF off s.
func stripBOM(s string) (bom, text string) {
	if strings.HasPrefix(s, utf8BOM) {
		return utf8BOM, s[len(utf8BOM):]
	}
	return "", s
}

// normalizeToLF turns "\r\n" and then every lone "\r" into "\n".
func normalizeToLF(s string) string {
	if strings.IndexByte(s, '\r') < 0 {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(s, "\r", "\n")
}

// lfReplacement replaces lf[start:end] of the LF-normalized original with
// text (which contains only "\n" line breaks).
type lfReplacement struct {
	start, end int
	text       string
}

// restoreLineEndings splices reps (sorted, disjoint, in the coordinates of
// normalizeToLF(orig)) into orig itself, so that untouched bytes keep their
// own line endings (pi 1.6, §7.4). Each "\n" of a replacement's text becomes
// the ending of the line on which the replacement starts. A file without
// any CR is simply the LF result.
func restoreLineEndings(orig string, reps []lfReplacement) string {
	if strings.IndexByte(orig, '\r') < 0 {
		return applyLFReplacements(orig, reps)
	}
	hasLF := strings.IndexByte(orig, '\n') >= 0
	offsets := make([]int, 0, 2*len(reps))
	for _, r := range reps {
		offsets = append(offsets, r.start, r.end)
	}
	offsets = origOffsets(orig, offsets)

	var b strings.Builder
	b.Grow(len(orig) + 64)
	// add appends a piece. A piece ending in a lone CR followed by one
	// starting with LF would fuse into a single CRLF break, so the written
	// file would have one line fewer than the diff shows: an extra LF keeps
	// the line count.
	last := byte(0)
	add := func(piece string) {
		if piece == "" {
			return
		}
		if last == '\r' && piece[0] == '\n' {
			b.WriteByte('\n')
		}
		b.WriteString(piece)
		last = piece[len(piece)-1]
	}
	prev := 0
	for i, r := range reps {
		start, end := offsets[2*i], offsets[2*i+1]
		add(orig[prev:start])
		eol := lineEndingAt(orig, start, hasLF)
		if eol == "\n" {
			add(r.text)
		} else {
			add(strings.ReplaceAll(r.text, "\n", eol))
		}
		prev = end
	}
	add(orig[prev:])
	return b.String()
}

// origOffsets maps ascending positions in normalizeToLF(orig) to positions in
// orig: a position maps to the start of the byte sequence ("\r\n", "\r",
// "\n" or any other byte) that produced the LF text's byte there.
func origOffsets(orig string, lfPos []int) []int {
	out := make([]int, len(lfPos))
	k, lf := 0, 0
	for i := 0; i <= len(orig) && k < len(lfPos); {
		for k < len(lfPos) && lfPos[k] == lf {
			out[k] = i
			k++
		}
		if i == len(orig) {
			break
		}
		if orig[i] == '\r' && i+1 < len(orig) && orig[i+1] == '\n' {
			i += 2
		} else {
			i++
		}
		lf++
	}
	for ; k < len(lfPos); k++ {
		out[k] = len(orig)
	}
	return out
}

// lineEndingAt returns the line ending of the line containing orig[pos]: its
// own terminator, or for a final unterminated line the terminator of the
// line before it, or "\n" when the file has no line break at all. A lone CR
// counts as an ending only in files without any LF (pi 1.6); elsewhere such
// a line gets "\n".
func lineEndingAt(orig string, pos int, hasLF bool) string {
	if i := strings.IndexAny(orig[pos:], "\r\n"); i >= 0 {
		return endingAt(orig, pos+i, hasLF)
	}
	if i := strings.LastIndexAny(orig[:pos], "\r\n"); i >= 0 {
		if orig[i] == '\n' && i > 0 && orig[i-1] == '\r' {
			return "\r\n"
		}
		return endingAt(orig, i, hasLF)
	}
	return "\n"
}

// endingAt classifies the line break starting at orig[i].
func endingAt(orig string, i int, hasLF bool) string {
	switch {
	case orig[i] == '\n':
		return "\n"
	case i+1 < len(orig) && orig[i+1] == '\n':
		return "\r\n"
	case !hasLF:
		return "\r"
	}
	return "\n"
}

// applyLFReplacements applies sorted, disjoint reps to s.
func applyLFReplacements(s string, reps []lfReplacement) string {
	var b strings.Builder
	n := len(s)
	for _, r := range reps {
		n += len(r.text) - (r.end - r.start)
	}
	b.Grow(n)
	prev := 0
	for _, r := range reps {
		b.WriteString(s[prev:r.start])
		b.WriteString(r.text)
		prev = r.end
	}
	b.WriteString(s[prev:])
	return b.String()
}
