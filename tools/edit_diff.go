package tools

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// edit's details: the numbered display diff, the unified patch and the first
// changed line. The line diff is the one of the npm
// "diff" package (jsdiff's diffLines): Myers' O(ND) algorithm exploring
// diagonals forward only, preferring the path furthest along the old text,
// with removals before additions in each change.

// diffPart is a run of whole lines: unchanged, added or removed. Each line
// keeps its "\n" (only the last line of a text may lack it).
//
// An unchanged run may have a hole: hidden more lines, not split out, sit
// between lines[:holeAt] and lines[holeAt:], each side holding at least the
// 4 context lines the formatters show (see editParts).
type diffPart struct {
	added, removed bool
	lines          []string
	holeAt, hidden int
}

func (p diffPart) changed() bool { return p.added || p.removed }

// count is the number of lines of the run, hidden ones included.
func (p diffPart) count() int { return len(p.lines) + p.hidden }

// diffTokens splits s into lines that keep their "\n", as jsdiff's line
// tokenizer does ("" has no lines).
func diffTokens(s string) []string {
	var out []string
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// diffComponent is a node of the linked list each search path carries.
type diffComponent struct {
	count          int
	added, removed bool
	prev           *diffComponent
}

type diffPath struct {
	oldPos int
	last   *diffComponent
}

// diffLines is jsdiff's diffLines(oldStr, newStr) without options.
func diffLines(oldStr, newStr string) []diffPart {
	parts, _ := myersLines(diffTokens(oldStr), diffTokens(newStr), -1)
	return parts
}

// maxDiffEdit bounds the edit length the Myers search explores: its time
// and garbage grow with the square of the number of changed lines, so a
// rewrite of thousands of lines would take seconds and gigabytes. Past the
// bound the changed block is shown as removed then added, in full.
const maxDiffEdit = 3000

// myersLines diffs two line lists as jsdiff does. With maxEdit >= 0 it gives
// up (false) once more than maxEdit lines would have to change.
func myersLines(oldTok, newTok []string, maxEdit int) ([]diffPart, bool) {
	// Compare interned ids instead of strings.
	ids := map[string]int{}
	intern := func(toks []string) []int {
		out := make([]int, len(toks))
		for i, t := range toks {
			id, ok := ids[t]
			if !ok {
				id = len(ids)
				ids[t] = id
			}
			out[i] = id
		}
		return out
	}
	oldIDs, newIDs := intern(oldTok), intern(newTok)
	oldLen, newLen := len(oldIDs), len(newIDs)

	extractCommon := func(p *diffPath, k int) int {
		oldPos := p.oldPos
		newPos := oldPos - k
		common := 0
		for newPos+1 < newLen && oldPos+1 < oldLen && oldIDs[oldPos+1] == newIDs[newPos+1] {
			newPos++
			oldPos++
			common++
		}
		if common > 0 {
			p.last = &diffComponent{count: common, prev: p.last}
		}
		p.oldPos = oldPos
		return newPos
	}
	addToPath := func(p *diffPath, added, removed bool, oldInc int) *diffPath {
		last := p.last
		if last != nil && last.added == added && last.removed == removed {
			return &diffPath{oldPos: p.oldPos + oldInc, last: &diffComponent{count: last.count + 1, added: added, removed: removed, prev: last.prev}}
		}
		return &diffPath{oldPos: p.oldPos + oldInc, last: &diffComponent{count: 1, added: added, removed: removed, prev: last}}
	}
	build := func(last *diffComponent) []diffPart {
		var comps []*diffComponent
		for c := last; c != nil; c = c.prev {
			comps = append(comps, c)
		}
		parts := make([]diffPart, 0, len(comps))
		oldPos, newPos := 0, 0
		for i := len(comps) - 1; i >= 0; i-- {
			c := comps[i]
			p := diffPart{added: c.added, removed: c.removed}
			if c.removed {
				p.lines = oldTok[oldPos : oldPos+c.count]
				oldPos += c.count
			} else {
				p.lines = newTok[newPos : newPos+c.count]
				newPos += c.count
				if !c.added {
					oldPos += c.count
				}
			}
			parts = append(parts, p)
		}
		return parts
	}

	initial := &diffPath{oldPos: -1}
	newPos := extractCommon(initial, 0)
	if initial.oldPos+1 >= oldLen && newPos+1 >= newLen {
		return build(initial.last), true
	}
	// best[offset+k] is the furthest-reaching path on diagonal k = oldPos-newPos.
	offset := newLen + 1
	best := make([]*diffPath, oldLen+newLen+3)
	best[offset] = initial
	const inf = int(^uint(0) >> 1)
	minDiag, maxDiag := -inf, inf
	if initial.oldPos+1 >= oldLen {
		maxDiag = -1
	}
	if newPos+1 >= newLen {
		minDiag = 1
	}
	limit := oldLen + newLen
	if maxEdit >= 0 {
		limit = min(limit, maxEdit)
	}
	for editLength := 1; editLength <= limit; editLength++ {
		for k := max(minDiag, -editLength); k <= min(maxDiag, editLength); k += 2 {
			removePath, addPath := best[offset+k-1], best[offset+k+1]
			if removePath != nil {
				best[offset+k-1] = nil
			}
			canAdd := false
			if addPath != nil {
				addNewPos := addPath.oldPos - k
				canAdd = 0 <= addNewPos && addNewPos < newLen
			}
			canRemove := removePath != nil && removePath.oldPos+1 < oldLen
			if !canAdd && !canRemove {
				best[offset+k] = nil
				continue
			}
			var base *diffPath
			if !canRemove || (canAdd && removePath.oldPos < addPath.oldPos) {
				base = addToPath(addPath, true, false, 0)
			} else {
				base = addToPath(removePath, false, true, 1)
			}
			newPos = extractCommon(base, k)
			if base.oldPos+1 >= oldLen && newPos+1 >= newLen {
				return build(base.last), true
			}
			best[offset+k] = base
			if base.oldPos+1 >= oldLen {
				maxDiag = min(maxDiag, k-1)
			}
			if newPos+1 >= newLen {
				minDiag = max(minDiag, k+1)
			}
		}
	}
	// Only a bounded search ends here: editLength oldLen+newLen always
	// reaches the end.
	return nil, false
}

// blockParts is the fallback diff: the common leading and trailing lines,
// and everything between them removed then added.
func blockParts(oldTok, newTok []string) []diffPart {
	pre := 0
	for pre < len(oldTok) && pre < len(newTok) && oldTok[pre] == newTok[pre] {
		pre++
	}
	suf := 0
	for suf < len(oldTok)-pre && suf < len(newTok)-pre && oldTok[len(oldTok)-1-suf] == newTok[len(newTok)-1-suf] {
		suf++
	}
	var parts []diffPart
	if pre > 0 {
		parts = append(parts, diffPart{lines: oldTok[:pre]})
	}
	if mid := oldTok[pre : len(oldTok)-suf]; len(mid) > 0 {
		parts = append(parts, diffPart{removed: true, lines: mid})
	}
	if mid := newTok[pre : len(newTok)-suf]; len(mid) > 0 {
		parts = append(parts, diffPart{added: true, lines: mid})
	}
	if suf > 0 {
		parts = append(parts, diffPart{lines: oldTok[len(oldTok)-suf:]})
	}
	return parts
}

// diffWindow is how many unchanged lines around each replacement pi 1.6
// hands to the line diff; farther lines are known to be equal.
const diffWindow = 32

// maxGapLines is the longest run of unchanged lines between two windows
// that editParts splits into lines. A longer run keeps only gapKeep lines
// at each end and a hole for the rest (the formatters show at most 4 lines
// at each end of a run), so a file of millions of lines costs no per-line
// tables.
const (
	maxGapLines = 4096
	gapKeep     = 8
)

// lineCursor finds line numbers and line starts in s, moving forward from
// the last answer (editParts asks in increasing order).
type lineCursor struct {
	s          string
	pos, count int // count = number of "\n" in s[:pos]
	line, off  int // off = byte offset where token line starts
}

// lineAt returns the number of "\n" in s[:off], the index of the token
// that contains off (as the line tables answered).
func (c *lineCursor) lineAt(off int) int {
	off = min(off, len(c.s))
	if off < c.pos {
		c.pos, c.count = 0, 0
	}
	c.count += strings.Count(c.s[c.pos:off], "\n")
	c.pos = off
	return c.count
}

// start returns the byte offset where token i starts (len(s) past the end).
func (c *lineCursor) start(i int) int {
	if i < c.line {
		c.line, c.off = 0, 0
	}
	for c.line < i && c.off < len(c.s) {
		j := strings.IndexByte(c.s[c.off:], '\n')
		if j < 0 {
			c.off = len(c.s)
		} else {
			c.off += j + 1
		}
		c.line++
	}
	return c.off
}

// tokens returns the tokens [i, j) of s.
func (c *lineCursor) tokens(i, j int) []string {
	if j <= i {
		return nil
	}
	a := c.start(i)
	b := c.start(j)
	return diffTokens(c.s[a:b])
}

// tokenCount is len(diffTokens(s)).
func tokenCount(s string) int {
	n := strings.Count(s, "\n")
	if len(s) > 0 && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// editParts is the line diff of base → newText computed, as pi 1.6 does,
// only in windows of diffWindow lines around the replacements reps (in base
// coordinates) that produced newText. It equals the whole-file diff except,
// possibly, for how repeated lines are aligned. Only the windows and the
// short runs between them are split into lines.
func editParts(base, newText string, reps []lfReplacement) []diffPart {
	bc, nc := &lineCursor{s: base}, &lineCursor{s: newText}
	baseN, newN := tokenCount(base), tokenCount(newText)
	type window struct{ bs, be, ns, ne int }
	var wins []window
	delta := 0
	for _, r := range reps {
		bs := bc.lineAt(r.start)
		be := min(baseN, bc.lineAt(r.end)+1)
		nStart, nEnd := r.start+delta, r.start+delta+len(r.text)
		delta += len(r.text) - (r.end - r.start)
		ns := nc.lineAt(nStart)
		ne := min(newN, nc.lineAt(nEnd)+1)
		w := window{bs: max(0, bs-diffWindow)}
		w.ns = ns - (bs - w.bs)
		w.be = min(baseN, be+diffWindow)
		w.ne = ne + (w.be - be)
		if n := len(wins); n > 0 && w.bs <= wins[n-1].be {
			if w.be > wins[n-1].be {
				wins[n-1].be, wins[n-1].ne = w.be, w.ne
			}
			continue
		}
		wins = append(wins, w)
	}
	whole := func() []diffPart { return diffTokensParts(diffTokens(base), diffTokens(newText)) }
	// gap is the unchanged base lines [from, to).
	gap := func(from, to int) diffPart {
		if to-from <= maxGapLines {
			return diffPart{lines: bc.tokens(from, to)}
		}
		head := bc.tokens(from, from+gapKeep)
		tail := bc.tokens(to-gapKeep, to)
		return diffPart{lines: append(head, tail...), holeAt: len(head), hidden: to - from - 2*gapKeep}
	}
	// The lines between windows are equal by construction; anything else
	// is a bug, answered with the whole-file diff.
	var parts []diffPart
	pb, pn := 0, 0
	for _, w := range wins {
		if w.bs-pb != w.ns-pn || w.ns < pn || w.ne > newN || w.ne < w.ns || w.bs < pb {
			return whole()
		}
		parts = appendParts(parts, gap(pb, w.bs))
		for _, p := range diffTokensParts(bc.tokens(w.bs, w.be), nc.tokens(w.ns, w.ne)) {
			parts = appendParts(parts, p)
		}
		pb, pn = w.be, w.ne
	}
	if baseN-pb != newN-pn {
		return whole()
	}
	return appendParts(parts, gap(pb, baseN))
}

// diffTokensParts is the bounded Myers diff with the block fallback.
func diffTokensParts(oldTok, newTok []string) []diffPart {
	if parts, ok := myersLines(oldTok, newTok, maxDiffEdit); ok {
		return parts
	}
	return blockParts(oldTok, newTok)
}

// appendParts appends p, merging it into the previous part of the same kind
// (the formatters expect maximal runs) and dropping empty parts. Merging
// two unchanged runs with holes keeps the first one's head and the second
// one's tail around one hole.
func appendParts(parts []diffPart, p diffPart) []diffPart {
	if len(p.lines) == 0 {
		return parts
	}
	n := len(parts)
	if n == 0 || parts[n-1].added != p.added || parts[n-1].removed != p.removed {
		return append(parts, p)
	}
	last := parts[n-1]
	merged := diffPart{added: p.added, removed: p.removed}
	switch {
	case last.hidden > 0 && p.hidden > 0:
		merged.lines = append(last.lines[:last.holeAt:last.holeAt], p.lines[p.holeAt:]...)
		merged.holeAt = last.holeAt
		merged.hidden = last.hidden + (len(last.lines) - last.holeAt) + p.holeAt + p.hidden
	case p.hidden > 0:
		merged.lines = append(last.lines[:len(last.lines):len(last.lines)], p.lines...)
		merged.holeAt, merged.hidden = len(last.lines)+p.holeAt, p.hidden
	default:
		merged.lines = append(last.lines[:len(last.lines):len(last.lines)], p.lines...)
		merged.holeAt, merged.hidden = last.holeAt, last.hidden
	}
	parts[n-1] = merged
	return parts
}

// trimNL drops a line's trailing "\n".
func trimNL(line string) string { return strings.TrimSuffix(line, "\n") }

// displayDiff is pi's generateDiffString as 1.6 shows it: numbered lines
// ("-" with the old line number, "+" with the new one, " " with the old one
// for context), numbers padded to the width of the larger line count,
// contextLines of context on each side of a change, and " <pad> ..." for
// each skipped run of unchanged lines; a run between two changes is shown
// whole up to 2*contextLines lines, else as its first and last
// contextLines around a marker. It also returns the new-file line where the
// first change begins (0: no change).
func displayDiff(parts []diffPart, oldStr, newStr string, contextLines int) (string, int) {
	width := len(strconv.Itoa(max(strings.Count(oldStr, "\n"), strings.Count(newStr, "\n")) + 1))
	var b strings.Builder
	line := func(sign byte, n int, text string) {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteByte(sign)
		num := strconv.Itoa(n)
		for range width - len(num) {
			b.WriteByte(' ')
		}
		b.WriteString(num)
		b.WriteByte(' ')
		b.WriteString(trimNL(text))
	}
	ellipsis := func() {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(" " + strings.Repeat(" ", width) + " ...")
	}

	oldLine, newLine := 1, 1
	first := 0
	for i, part := range parts {
		if part.changed() {
			if first == 0 {
				first = newLine
			}
			for _, l := range part.lines {
				if part.added {
					line('+', newLine, l)
					newLine++
				} else {
					line('-', oldLine, l)
					oldLine++
				}
			}
			continue
		}
		before := i > 0 && parts[i-1].changed()
		after := i < len(parts)-1 && parts[i+1].changed()
		raw := part.lines
		total := part.count()
		// Lines shown at the start and at the end of the run.
		head, tail := 0, 0
		switch {
		case before && after:
			if total <= 2*contextLines {
				head = total
			} else {
				head, tail = contextLines, contextLines
			}
		case before:
			head = min(total, contextLines)
		case after:
			tail = min(total, contextLines)
		}
		for _, l := range raw[:head] {
			line(' ', oldLine, l)
			oldLine++
			newLine++
		}
		if skipped := total - head - tail; skipped > 0 {
			if before || after {
				ellipsis()
			}
			oldLine += skipped
			newLine += skipped
		}
		for _, l := range raw[len(raw)-tail:] {
			line(' ', oldLine, l)
			oldLine++
			newLine++
		}
	}
	return b.String(), first
}

// patchHunk is one hunk of a unified patch; lines carry their prefix and
// still end in "\n" except a file's unterminated last line.
type patchHunk struct {
	oldStart, oldLines, newStart, newLines int
	lines                                  []string
}

// unifiedPatch is jsdiff's createTwoFilesPatch(name, name, old, new) with
// only the "---"/"+++" headers (no Index line, no timestamps) and context
// lines of context, including "\ No newline at end of file" markers.
func unifiedPatch(name string, parts []diffPart, context int) string {
	// A trailing empty unchanged part closes the last hunk, as in jsdiff.
	parts = append(parts[:len(parts):len(parts)], diffPart{})
	prefixed := func(prefix string, lines []string) []string {
		out := make([]string, len(lines))
		for i, l := range lines {
			out[i] = prefix + l
		}
		return out
	}
	var hunks []patchHunk
	oldRangeStart, newRangeStart := 0, 0
	var cur []string
	oldLine, newLine := 1, 1
	for i, part := range parts {
		lines := part.lines
		if part.changed() {
			if oldRangeStart == 0 {
				oldRangeStart, newRangeStart = oldLine, newLine
				if i > 0 {
					prev := parts[i-1].lines
					cur = nil
					if context > 0 {
						cur = prefixed(" ", prev[max(0, len(prev)-context):])
					}
					oldRangeStart -= len(cur)
					newRangeStart -= len(cur)
				}
			}
			sign := "-"
			if part.added {
				sign = "+"
			}
			cur = append(cur, prefixed(sign, lines)...)
			if part.added {
				newLine += len(lines)
			} else {
				oldLine += len(lines)
			}
			continue
		}
		if oldRangeStart != 0 {
			if part.count() <= context*2 && i < len(parts)-2 {
				cur = append(cur, prefixed(" ", lines)...)
			} else {
				n := min(part.count(), context)
				cur = append(cur, prefixed(" ", lines[:n])...)
				hunks = append(hunks, patchHunk{
					oldStart: oldRangeStart, oldLines: oldLine - oldRangeStart + n,
					newStart: newRangeStart, newLines: newLine - newRangeStart + n,
					lines: cur,
				})
				oldRangeStart, newRangeStart, cur = 0, 0, nil
			}
		}
		oldLine += part.count()
		newLine += part.count()
	}

	var b strings.Builder
	b.WriteString("--- " + name + "\n+++ " + name + "\n")
	for _, h := range hunks {
		// Unified diff quirk: an empty range starts one line earlier.
		if h.oldLines == 0 {
			h.oldStart--
		}
		if h.newLines == 0 {
			h.newStart--
		}
		b.WriteString("@@ -" + strconv.Itoa(h.oldStart) + "," + strconv.Itoa(h.oldLines) +
			" +" + strconv.Itoa(h.newStart) + "," + strconv.Itoa(h.newLines) + " @@\n")
		for _, l := range h.lines {
			if strings.HasSuffix(l, "\n") {
				b.WriteString(l)
			} else {
				b.WriteString(l + "\n\\ No newline at end of file\n")
			}
		}
	}
	return b.String()
}

// editDetails is edit's details object.
type editDetails struct {
	Diff             string `json:"diff"`
	Patch            string `json:"patch"`
	FirstChangedLine *int   `json:"firstChangedLine,omitempty"`
}

// computeEditDetails diffs the LF base against the LF result, around the
// replacements reps that produced it.
func computeEditDetails(name, base, newText string, reps []lfReplacement) editDetails {
	parts := cutLongLines(editParts(base, newText, reps))
	diff, first := displayDiff(parts, base, newText, 4)
	d := editDetails{Diff: diff, Patch: unifiedPatch(name, parts, 4)}
	if first > 0 {
		d.FirstChangedLine = &first
	}
	return d
}

// maxDiffLineBytes bounds one line of the details' diff and patch: a longer
// line (a minified file, a file of NUL bytes) is cut there with a note of
// how many bytes were left out, so the details hold a bounded window of
// the file. A patch with a cut line does not apply.
const maxDiffLineBytes = 16 << 10

// cutLongLines returns parts with every line over maxDiffLineBytes cut.
func cutLongLines(parts []diffPart) []diffPart {
	for i, p := range parts {
		var cut []string
		for j, l := range p.lines {
			body, nl := strings.CutSuffix(l, "\n")
			if len(body) <= maxDiffLineBytes {
				continue
			}
			if cut == nil {
				cut = append([]string(nil), p.lines...)
			}
			k := maxDiffLineBytes
			for k > 0 && !utf8.RuneStart(body[k]) {
				k--
			}
			c := body[:k] + "… [" + strconv.Itoa(len(body)-k) + " more bytes]"
			if nl {
				c += "\n"
			}
			cut[j] = c
		}
		if cut != nil {
			parts[i].lines = cut
		}
	}
	return parts
}
