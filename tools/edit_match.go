package tools

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// Matching and validation of edit's replacements.

// editSpec is one requested replacement.
type editSpec struct {
	OldText string `json:"oldText"`
	NewText string `json:"newText"`
}

// appliedEdits is the outcome of applyEdits.
type appliedEdits struct {
	base    string          // the LF-normalized original
	newText string          // the LF text to write (before line-ending restore)
	reps    []lfReplacement // base → newText, sorted and disjoint
}

// normalizeForFuzzyMatch is pi's normalizeForFuzzyMatch: NFKC, trailing
// whitespace (JavaScript's trimEnd set) stripped from every line, typographic
// quotes, dashes and Unicode spaces mapped to ASCII.
func normalizeForFuzzyMatch(s string) string {
	s = norm.NFKC.String(s)
	var b strings.Builder
	b.Grow(len(s))
	for {
		i := strings.IndexByte(s, '\n')
		line := s
		if i >= 0 {
			line = s[:i]
		}
		for _, r := range strings.TrimRightFunc(line, isJSSpace) {
			b.WriteRune(fuzzyRune(r))
		}
		if i < 0 {
			return b.String()
		}
		b.WriteByte('\n')
		s = s[i+1:]
	}
}

// fuzzyRune maps the characters pi's fuzzy normalization replaces.
func fuzzyRune(r rune) rune {
	switch {
	case r >= 0x2018 && r <= 0x201B:
		return '\''
	case r >= 0x201C && r <= 0x201F:
		return '"'
	case r >= 0x2010 && r <= 0x2015, r == 0x2212:
		return '-'
	case r == 0x00A0, r >= 0x2002 && r <= 0x200A, r == 0x202F, r == 0x205F, r == 0x3000:
		return ' '
	}
	return r
}

// isJSSpace reports whether JavaScript's String.prototype.trim treats r as
// whitespace (WhiteSpace and LineTerminator). Unlike unicode.IsSpace it
// includes U+FEFF and excludes U+0085.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0x00A0, 0x1680, 0x2028, 0x2029,
		0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

// countOccurrences is pi's fuzzyContent.split(fuzzyOldText).length - 1:
// non-overlapping occurrences, and for an empty needle (a whitespace-only
// oldText normalizes to "") the number of UTF-16 code units minus one.
func countOccurrences(haystack, needle string) int {
	if needle == "" {
		return utf16Len(haystack) - 1
	}
	return strings.Count(haystack, needle)
}

// lazyFuzzy computes normalizeForFuzzyMatch(s) once, on first use: exact
// matches of small edits in big files never pay for NFKC of the whole file
// except for the uniqueness count, which pi always does in fuzzy space.
type lazyFuzzy struct {
	s    string
	done bool
	fz   string
}

func (l *lazyFuzzy) get() string {
	if !l.done {
		l.fz, l.done = normalizeForFuzzyMatch(l.s), true
	}
	return l.fz
}

// fuzzyFind is pi's fuzzyFindText: an exact search, then the fuzzy-normalized
// oldText in the fuzzy-normalized content. Indices of a fuzzy match refer to
// the normalized content.
func fuzzyFind(content *lazyFuzzy, oldText, fuzzyOld string) (index, length int, fuzzy bool) {
	if i := strings.Index(content.s, oldText); i >= 0 {
		return i, len(oldText), false
	}
	if i := strings.Index(content.get(), fuzzyOld); i >= 0 {
		return i, len(fuzzyOld), true
	}
	return -1, 0, false
}

type matchedEdit struct {
	editIndex int
	index     int
	length    int
	newText   string
}

// applyEdits is pi's applyEditsToNormalizedContent: every edit is matched
// against the same LF-normalized original, validated in pi's fixed order
// (empty → not found → duplicate, per edit → overlap → no change) and
// applied last to first. path is the path as the model gave it.
func applyEdits(normalized string, edits []editSpec, path string) (*appliedEdits, error) {
	n := len(edits)
	olds := make([]string, n)
	news := make([]string, n)
	for i, e := range edits {
		olds[i], news[i] = normalizeToLF(e.OldText), normalizeToLF(e.NewText)
	}
	for i := range olds {
		if olds[i] == "" {
			if n == 1 {
				return nil, fmt.Errorf("oldText must not be empty in %s.", path)
			}
			return nil, fmt.Errorf("edits[%d].oldText must not be empty in %s.", i, path)
		}
	}
	fuzzyOlds := make([]string, n)
	for i := range olds {
		fuzzyOlds[i] = normalizeForFuzzyMatch(olds[i])
	}

	orig := &lazyFuzzy{s: normalized}
	usedFuzzy := false
	for i := range olds {
		if _, _, fz := fuzzyFind(orig, olds[i], fuzzyOlds[i]); fz {
			usedFuzzy = true
			break
		}
	}
	// In fuzzy mode every edit is matched against the normalized file, so
	// all offsets live in one space.
	base := orig
	if usedFuzzy {
		base = &lazyFuzzy{s: orig.get()}
	}

	matched := make([]matchedEdit, 0, n)
	for i := range olds {
		idx, length, _ := fuzzyFind(base, olds[i], fuzzyOlds[i])
		if idx < 0 {
			if n == 1 {
				return nil, fmt.Errorf("Could not find the exact text in %s. The old text must match exactly including all whitespace and newlines.", path)
			}
			return nil, fmt.Errorf("Could not find edits[%d] in %s. The oldText must match exactly including all whitespace and newlines.", i, path)
		}
		if k := countOccurrences(base.get(), fuzzyOlds[i]); k > 1 {
			if n == 1 {
				return nil, fmt.Errorf("Found %d occurrences of the text in %s. The text must be unique. Please provide more context to make it unique.", k, path)
			}
			return nil, fmt.Errorf("Found %d occurrences of edits[%d] in %s. Each oldText must be unique. Please provide more context to make it unique.", k, i, path)
		}
		matched = append(matched, matchedEdit{editIndex: i, index: idx, length: length, newText: news[i]})
	}

	slices.SortStableFunc(matched, func(a, b matchedEdit) int { return a.index - b.index })
	for i := 1; i < len(matched); i++ {
		p, c := matched[i-1], matched[i]
		if p.index+p.length > c.index {
			return nil, fmt.Errorf("edits[%d] and edits[%d] overlap in %s. Merge them into one edit or target disjoint regions.", p.editIndex, c.editIndex, path)
		}
	}

	var reps []lfReplacement
	if usedFuzzy {
		var err error
		reps, err = preservingLineReplacements(normalized, base.s, matched)
		if err != nil {
			return nil, err
		}
	} else {
		reps = make([]lfReplacement, len(matched))
		for i, m := range matched {
			reps[i] = lfReplacement{start: m.index, end: m.index + m.length, text: m.newText}
		}
	}
	newText := applyLFReplacements(normalized, reps)
	if newText == normalized {
		if n == 1 {
			return nil, fmt.Errorf("No changes made to %s. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected.", path)
		}
		return nil, fmt.Errorf("No changes made to %s. The replacements produced identical content.", path)
	}
	return &appliedEdits{base: normalized, newText: newText, reps: reps}, nil
}

// lineSpan is one line of a text, its "\n" included.
type lineSpan struct{ start, end int }

// lineSpans splits s like /[^\n]*\n|[^\n]+/g: a final line without "\n" is
// a line only when it is not empty.
func lineSpans(s string) []lineSpan {
	spans := make([]lineSpan, 0, strings.Count(s, "\n")+1)
	for start := 0; start < len(s); {
		i := strings.IndexByte(s[start:], '\n')
		end := len(s)
		if i >= 0 {
			end = start + i + 1
		}
		spans = append(spans, lineSpan{start, end})
		start = end
	}
	return spans
}

var errOutsideBase = errors.New("Replacement range is outside the base content.")

// replacementLines returns the lines [first, last) that the range
// [start, start+length) of the text split into lines touches.
func replacementLines(lines []lineSpan, start, length int) (int, int, error) {
	end := start + length
	first := -1
	for i, l := range lines {
		if start >= l.start && start < l.end {
			first = i
			break
		}
	}
	if first < 0 {
		return 0, 0, errOutsideBase
	}
	last := first
	for last < len(lines) && lines[last].end < end {
		last++
	}
	if last >= len(lines) {
		return 0, 0, errOutsideBase
	}
	return first, last + 1, nil
}

// preservingLineReplacements is pi's applyReplacementsPreservingUnchangedLines
// expressed as replacements of the original: matches found in the fuzzy
// text are widened to the whole lines they touch; those lines are rewritten
// from the fuzzy text with the replacements applied, and every other line
// keeps its original bytes.
func preservingLineReplacements(original, fuzzy string, matched []matchedEdit) ([]lfReplacement, error) {
	origLines := lineSpans(original)
	baseLines := lineSpans(fuzzy)
	if len(origLines) != len(baseLines) {
		return nil, errors.New("Cannot preserve unchanged lines because the base content has a different line count.")
	}
	type group struct {
		first, last int
		edits       []matchedEdit
	}
	var groups []group
	for _, m := range matched {
		first, last, err := replacementLines(baseLines, m.index, m.length)
		if err != nil {
			return nil, err
		}
		if g := len(groups) - 1; g >= 0 && first < groups[g].last {
			groups[g].last = max(groups[g].last, last)
			groups[g].edits = append(groups[g].edits, m)
			continue
		}
		groups = append(groups, group{first: first, last: last, edits: []matchedEdit{m}})
	}
	reps := make([]lfReplacement, len(groups))
	for i, g := range groups {
		from, to := baseLines[g.first].start, baseLines[g.last-1].end
		inner := make([]lfReplacement, len(g.edits))
		for j, m := range g.edits {
			inner[j] = lfReplacement{start: m.index - from, end: m.index - from + m.length, text: m.newText}
		}
		reps[i] = lfReplacement{
			start: origLines[g.first].start,
			end:   origLines[g.last-1].end,
			text:  applyLFReplacements(fuzzy[from:to], inner),
		}
	}
	return reps, nil
}
