package tools

import (
	"strconv"
	"strings"
)

// edit's details: the numbered display diff, the unified patch and the first
// changed line (pi-contracts §7.5). The line diff is the one of the npm
// "diff" package (jsdiff's diffLines): Myers' O(ND) algorithm exploring
// diagonals forward only, preferring the path furthest along the old text,
// with removals before additions in each change.

// diffPart is a run of whole lines: unchanged, added or removed. Each line
// keeps its "\n" (only the last line of a text may lack it).
type diffPart struct {
	added, removed bool
	lines          []string
}

func (p diffPart) changed() bool { return p.added || p.removed }

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
	oldTok, newTok := diffTokens(oldStr), diffTokens(newStr)
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
		return build(initial.last)
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
	for editLength := 1; editLength <= oldLen+newLen; editLength++ {
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
				return build(base.last)
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
	// Unreachable: editLength oldLen+newLen always reaches the end.
	return nil
}

// trimNL drops a line's trailing "\n".
func trimNL(line string) string { return strings.TrimSuffix(line, "\n") }

// displayDiff is pi's generateDiffString: numbered lines ("-", "+" or " ",
// the number padded to the width of the larger line count), contextLines of
// context around changes and " <pad> ..." where unchanged lines are skipped.
// It also returns the new-file line where the first change begins (0: none).
func displayDiff(parts []diffPart, oldStr, newStr string, contextLines int) (string, int) {
	width := len(strconv.Itoa(max(strings.Count(oldStr, "\n"), strings.Count(newStr, "\n")) + 1))
	pad := func(n int) string {
		s := strconv.Itoa(n)
		if len(s) < width {
			s = strings.Repeat(" ", width-len(s)) + s
		}
		return s
	}
	ellipsis := " " + strings.Repeat(" ", width) + " ..."

	var out []string
	oldLine, newLine := 1, 1
	lastWasChange := false
	first := 0
	for i, part := range parts {
		if part.changed() {
			if first == 0 {
				first = newLine
			}
			for _, l := range part.lines {
				if part.added {
					out = append(out, "+"+pad(newLine)+" "+trimNL(l))
					newLine++
				} else {
					out = append(out, "-"+pad(oldLine)+" "+trimNL(l))
					oldLine++
				}
			}
			lastWasChange = true
			continue
		}
		nextIsChange := i < len(parts)-1 && parts[i+1].changed()
		raw := part.lines
		if lastWasChange || nextIsChange {
			show := raw
			skipStart, skipEnd := 0, 0
			if !lastWasChange {
				skipStart = max(0, len(raw)-contextLines)
				show = raw[skipStart:]
			}
			if !nextIsChange && len(show) > contextLines {
				skipEnd = len(show) - contextLines
				show = show[:contextLines]
			}
			if skipStart > 0 {
				out = append(out, ellipsis)
				oldLine += skipStart
				newLine += skipStart
			}
			for _, l := range show {
				out = append(out, " "+pad(oldLine)+" "+trimNL(l))
				oldLine++
				newLine++
			}
			if skipEnd > 0 {
				out = append(out, ellipsis)
				oldLine += skipEnd
				newLine += skipEnd
			}
		} else {
			oldLine += len(raw)
			newLine += len(raw)
		}
		lastWasChange = false
	}
	return strings.Join(out, "\n"), first
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
			if len(lines) <= context*2 && i < len(parts)-2 {
				cur = append(cur, prefixed(" ", lines)...)
			} else {
				n := min(len(lines), context)
				cur = append(cur, prefixed(" ", lines[:n])...)
				hunks = append(hunks, patchHunk{
					oldStart: oldRangeStart, oldLines: oldLine - oldRangeStart + n,
					newStart: newRangeStart, newLines: newLine - newRangeStart + n,
					lines: cur,
				})
				oldRangeStart, newRangeStart, cur = 0, 0, nil
			}
		}
		oldLine += len(lines)
		newLine += len(lines)
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

// computeEditDetails diffs the LF base against the LF result.
func computeEditDetails(name, base, newText string) editDetails {
	parts := diffLines(base, newText)
	diff, first := displayDiff(parts, base, newText, 4)
	d := editDetails{Diff: diff, Patch: unifiedPatch(name, parts, 4)}
	if first > 0 {
		d.FirstChangedLine = &first
	}
	return d
}
