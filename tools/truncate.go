package tools

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf16"
)

// pi's shared limits.
const (
	defaultMaxLines   = 2000
	defaultMaxBytes   = 51200
	grepMaxLineLength = 500
)

// truncatedBy says which limit cut the output: "", "lines" or "bytes". The
// empty value marshals as JSON null, as pi's TruncationResult does.
type truncatedBy string

const (
	byNone  truncatedBy = ""
	byLines truncatedBy = "lines"
	byBytes truncatedBy = "bytes"
)

func (t truncatedBy) MarshalJSON() ([]byte, error) {
	if t == byNone {
		return []byte("null"), nil
	}
	return json.Marshal(string(t))
}

func (t *truncatedBy) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*t = byNone
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*t = truncatedBy(s)
	return nil
}

// truncation is pi's TruncationResult; tools put it verbatim into
// details.truncation.
type truncation struct {
	Content               string      `json:"content"`
	Truncated             bool        `json:"truncated"`
	TruncatedBy           truncatedBy `json:"truncatedBy"`
	TotalLines            int         `json:"totalLines"`
	TotalBytes            int         `json:"totalBytes"`
	OutputLines           int         `json:"outputLines"`
	OutputBytes           int         `json:"outputBytes"`
	LastLinePartial       bool        `json:"lastLinePartial"`
	FirstLineExceedsLimit bool        `json:"firstLineExceedsLimit"`
	MaxLines              int         `json:"maxLines"`
	MaxBytes              int         `json:"maxBytes"`
}

// splitLines is truncate.ts's line model (§2.2): split on "\n", a single
// trailing "\n" adds no line, "" has no lines. read does not use it.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.Split(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// noTruncation is the result when s fits both limits.
func noTruncation(s string, lines, maxLines, maxBytes int) truncation {
	return truncation{
		Content:     s,
		TotalLines:  lines,
		TotalBytes:  len(s),
		OutputLines: lines,
		OutputBytes: len(s),
		MaxLines:    maxLines,
		MaxBytes:    maxBytes,
	}
}

// truncateHead keeps whole lines from the beginning of s (§2.3).
func truncateHead(s string, maxLines, maxBytes int) truncation {
	lines := splitLines(s)
	if len(lines) <= maxLines && len(s) <= maxBytes {
		return noTruncation(s, len(lines), maxLines, maxBytes)
	}
	t := truncation{
		Truncated:  true,
		TotalLines: len(lines),
		TotalBytes: len(s),
		MaxLines:   maxLines,
		MaxBytes:   maxBytes,
	}
	if len(lines) > 0 && len(lines[0]) > maxBytes {
		t.TruncatedBy = byBytes
		t.FirstLineExceedsLimit = true
		return t
	}
	by := byLines
	kept, size := 0, 0
	for i := 0; i < len(lines) && i < maxLines; i++ {
		n := len(lines[i])
		if i > 0 {
			n++
		}
		if size+n > maxBytes {
			by = byBytes
			break
		}
		kept++
		size += n
	}
	if kept >= maxLines && size <= maxBytes {
		by = byLines
	}
	t.TruncatedBy = by
	t.Content = strings.Join(lines[:kept], "\n")
	t.OutputLines = kept
	t.OutputBytes = len(t.Content)
	return t
}

// truncateTail keeps whole lines from the end of s; a last line larger than
// maxBytes alone is cut to its last maxBytes bytes, moved forward to a UTF-8
// character boundary (§2.4).
func truncateTail(s string, maxLines, maxBytes int) truncation {
	lines := splitLines(s)
	if len(lines) <= maxLines && len(s) <= maxBytes {
		return noTruncation(s, len(lines), maxLines, maxBytes)
	}
	t := truncation{
		Truncated:  true,
		TotalLines: len(lines),
		TotalBytes: len(s),
		MaxLines:   maxLines,
		MaxBytes:   maxBytes,
	}
	by := byLines
	first, kept, size := len(lines), 0, 0
	var partial string
	for i := len(lines) - 1; i >= 0 && kept < maxLines; i-- {
		n := len(lines[i])
		if kept > 0 {
			n++
		}
		if size+n > maxBytes {
			by = byBytes
			if kept == 0 {
				partial = tailBytes(lines[i], maxBytes)
				t.LastLinePartial = true
				kept, size = 1, len(partial)
			}
			break
		}
		first = i
		kept++
		size += n
	}
	if kept >= maxLines && size <= maxBytes {
		by = byLines
	}
	t.TruncatedBy = by
	if t.LastLinePartial {
		t.Content = partial
	} else {
		t.Content = strings.Join(lines[first:], "\n")
	}
	t.OutputLines = kept
	t.OutputBytes = len(t.Content)
	return t
}

// tailBytes returns the last maxBytes bytes of s, advanced past UTF-8
// continuation bytes so no character is split.
func tailBytes(s string, maxBytes int) string {
	if len(s) <= maxBytes {
		return s
	}
	start := len(s) - max(maxBytes, 0)
	for start < len(s) && s[start]&0xC0 == 0x80 {
		start++
	}
	return s[start:]
}

// truncateLine shortens s to maxChars UTF-16 code units plus
// "... [truncated]", never splitting a surrogate pair (§2.5).
func truncateLine(s string, maxChars int) (string, bool) {
	if utf16Len(s) <= maxChars {
		return s, false
	}
	units := 0
	for i, r := range s {
		w := utf16.RuneLen(r)
		if units+w > maxChars {
			return s[:i] + "... [truncated]", true
		}
		units += w
	}
	return s, false
}

// utf16Len is the JavaScript length of s.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// formatSize is pi's human-readable size (§2.6).
func formatSize(n int) string {
	switch {
	case n < 1024:
		return strconv.Itoa(n) + "B"
	case n < 1024*1024:
		return strconv.FormatFloat(float64(n)/1024, 'f', 1, 64) + "KB"
	}
	return strconv.FormatFloat(float64(n)/(1024*1024), 'f', 1, 64) + "MB"
}
