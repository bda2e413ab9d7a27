package tools

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/loop"
)

func numberedLines(from, to int, prefix string) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "%s%d\n", prefix, i)
	}
	return b.String()
}

func TestEditDisplayDiffGolden(t *testing.T) {
	twenty := numberedLines(1, 20, "l")
	twentyEdited := strings.Replace(twenty, "l10\n", "L10\n", 1)
	cases := []struct {
		name, old, new string
		diff           string
		first          int
	}{
		{"one line", "Hello, world!", "Hello, testing!", "-1 Hello, world!\n+1 Hello, testing!", 1},
		{"20 lines, line 10", twenty, twentyEdited,
			"    ...\n  6 l6\n  7 l7\n  8 l8\n  9 l9\n-10 l10\n+10 L10\n 11 l11\n 12 l12\n 13 l13\n 14 l14\n    ...", 10},
		// A run of 8 unchanged lines between two changes is kept whole.
		{"gap of 8", numberedLines(1, 10, "x"), strings.NewReplacer("x1\n", "X1\n", "x10\n", "X10\n").Replace(numberedLines(1, 10, "x")),
			"- 1 x1\n+ 1 X1\n  2 x2\n  3 x3\n  4 x4\n  5 x5\n  6 x6\n  7 x7\n  8 x8\n  9 x9\n-10 x10\n+10 X10", 1},
		// A longer run shows 4 lines after the change, a marker, 4 before the next.
		{"gap of 9", numberedLines(1, 11, "x"), strings.NewReplacer("x1\n", "X1\n", "x11\n", "X11\n").Replace(numberedLines(1, 11, "x")),
			"- 1 x1\n+ 1 X1\n  2 x2\n  3 x3\n  4 x4\n  5 x5\n    ...\n  7 x7\n  8 x8\n  9 x9\n 10 x10\n-11 x11\n+11 X11", 1},
		{"short runs at the ends", "a\nb\nc\n", "a\nB\nc\n", " 1 a\n-2 b\n+2 B\n 3 c", 2},
		{"three changes", numberedLines(1, 30, "y"), strings.NewReplacer("y3\n", "Y3\n", "y15\n", "Y15\n", "y18\n", "").Replace(numberedLines(1, 30, "y")),
			"  1 y1\n  2 y2\n- 3 y3\n+ 3 Y3\n  4 y4\n  5 y5\n  6 y6\n  7 y7\n    ...\n 11 y11\n 12 y12\n 13 y13\n 14 y14\n-15 y15\n+15 Y15\n 16 y16\n 17 y17\n-18 y18\n 19 y19\n 20 y20\n 21 y21\n 22 y22\n    ...", 3},
		{"pure deletion", "a\nb\nc\n", "a\nc\n", " 1 a\n-2 b\n 3 c", 2},
		// Context lines carry old line numbers.
		{"pure insertion", "a\nc\n", "a\nb\nc\n", " 1 a\n+2 b\n 2 c", 2},
		{"deletion at end", "a\nb\nc\n", "a\nb\n", " 1 a\n 2 b\n-3 c", 3},
		{"width from the longer text", numberedLines(1, 9, "n"), numberedLines(1, 9, "n") + "n10\n",
			"    ...\n  6 n6\n  7 n7\n  8 n8\n  9 n9\n+10 n10", 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			parts := diffLines(c.old, c.new)
			diff, first := displayDiff(parts, c.old, c.new, 4)
			if diff != c.diff {
				t.Errorf("diff:\n%s\nwant:\n%s", diff, c.diff)
			}
			if first != c.first {
				t.Errorf("firstChangedLine = %d, want %d", first, c.first)
			}
		})
	}
}

func TestEditPatchGolden(t *testing.T) {
	cases := []struct {
		name, old, new, patch string
	}{
		{"no newline at end", "Hello, world!", "Hello, testing!",
			"--- a.txt\n+++ a.txt\n@@ -1,1 +1,1 @@\n-Hello, world!\n\\ No newline at end of file\n+Hello, testing!\n\\ No newline at end of file\n"},
		{"newline kept", "a\nb\nc\n", "a\nB\nc\n",
			"--- a.txt\n+++ a.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"newline added at end", "a\nb", "a\nb\n",
			"--- a.txt\n+++ a.txt\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"},
		{"all deleted", "x\n", "",
			"--- a.txt\n+++ a.txt\n@@ -1,1 +0,0 @@\n-x\n"},
		{"two hunks", numberedLines(1, 20, "l"), strings.NewReplacer("l2\n", "L2\n", "l19\n", "L19\n").Replace(numberedLines(1, 20, "l")),
			"--- a.txt\n+++ a.txt\n@@ -1,6 +1,6 @@\n l1\n-l2\n+L2\n l3\n l4\n l5\n l6\n@@ -15,6 +15,6 @@\n l15\n l16\n l17\n l18\n-l19\n+L19\n l20\n"},
		{"hunks joined across 8 lines", numberedLines(1, 12, "l"), strings.NewReplacer("l2\n", "L2\n", "l11\n", "L11\n").Replace(numberedLines(1, 12, "l")),
			"--- a.txt\n+++ a.txt\n@@ -1,12 +1,12 @@\n l1\n-l2\n+L2\n l3\n l4\n l5\n l6\n l7\n l8\n l9\n l10\n-l11\n+L11\n l12\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := unifiedPatch("a.txt", diffLines(c.old, c.new), 4)
			if got != c.patch {
				t.Errorf("patch:\n%q\nwant:\n%q", got, c.patch)
			}
			if applied, err := applyUnifiedPatch(c.old, got); err != nil || applied != c.new {
				t.Errorf("patch does not apply: %v; got %q want %q", err, applied, c.new)
			}
		})
	}
}

func TestEditDetailsJSON(t *testing.T) {
	d := computeEditDetails("a.txt", "Hello, world!", "Hello, testing!", []lfReplacement{{7, 12, "testing"}})
	if d.FirstChangedLine == nil || *d.FirstChangedLine != 1 {
		t.Fatalf("firstChangedLine = %v", d.FirstChangedLine)
	}
	b, err := loop.MarshalNoEscape(d)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"diff":"-1 Hello, world!\n+1 Hello, testing!","patch":"--- a.txt\n+++ a.txt\n@@ -1,1 +1,1 @@\n-Hello, world!\n\\ No newline at end of file\n+Hello, testing!\n\\ No newline at end of file\n","firstChangedLine":1}`
	if string(b) != want {
		t.Errorf("details JSON:\n%s\nwant:\n%s", b, want)
	}
}

// TestEditDiffMyersPrefersRemovalsFirst checks jsdiff's shape for a
// replacement block: all removed lines, then all added lines.
func TestEditDiffMyersShape(t *testing.T) {
	parts := diffLines("a\nb\nc\nd\n", "a\nB\nC\nd\n")
	var got []string
	for _, p := range parts {
		kind := "="
		if p.added {
			kind = "+"
		} else if p.removed {
			kind = "-"
		}
		got = append(got, kind+strconv.Itoa(len(p.lines)))
	}
	if s := strings.Join(got, " "); s != "=1 -2 +2 =1" {
		t.Errorf("parts = %s, want =1 -2 +2 =1", s)
	}
}

// applyUnifiedPatch applies a patch produced by unifiedPatch to old, strictly:
// every context and removed line must match.
func applyUnifiedPatch(old, patch string) (string, error) {
	oldLines := diffTokens(old)
	lines := strings.SplitAfter(patch, "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "--- ") || !strings.HasPrefix(lines[1], "+++ ") {
		return "", fmt.Errorf("bad headers")
	}
	lines = lines[2:]
	var out []string
	pos := 0 // next old line to copy
	for i := 0; i < len(lines) && lines[i] != ""; {
		var os, ol, ns, nl int
		if _, err := fmt.Sscanf(lines[i], "@@ -%d,%d +%d,%d @@\n", &os, &ol, &ns, &nl); err != nil {
			return "", fmt.Errorf("bad hunk header %q: %v", lines[i], err)
		}
		i++
		start := os - 1
		if ol == 0 {
			start = os
		}
		if start < pos || start > len(oldLines) {
			return "", fmt.Errorf("hunk at %d out of order", os)
		}
		out = append(out, oldLines[pos:start]...)
		pos = start
		seenOld, seenNew := 0, 0
		for i < len(lines) && lines[i] != "" && !strings.HasPrefix(lines[i], "@@") {
			l := lines[i]
			i++
			text := l[1:]
			if i < len(lines) && lines[i] == "\\ No newline at end of file\n" {
				text = strings.TrimSuffix(text, "\n")
				i++
			}
			switch l[0] {
			case ' ', '-':
				if pos >= len(oldLines) || oldLines[pos] != text {
					return "", fmt.Errorf("line %d: context mismatch", pos+1)
				}
				if l[0] == ' ' {
					out = append(out, text)
					seenNew++
				}
				pos++
				seenOld++
			case '+':
				out = append(out, text)
				seenNew++
			default:
				return "", fmt.Errorf("bad patch line %q", l)
			}
		}
		if seenOld != ol || seenNew != nl {
			return "", fmt.Errorf("hunk counts %d,%d; header says %d,%d", seenOld, seenNew, ol, nl)
		}
	}
	out = append(out, oldLines[pos:]...)
	return strings.Join(out, ""), nil
}

// lcsLen is the length of a longest common subsequence of two line lists.
func lcsLen(a, b []string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			switch {
			case a[i-1] == b[j-1]:
				cur[j] = prev[j-1] + 1
			case prev[j] >= cur[j-1]:
				cur[j] = prev[j]
			default:
				cur[j] = cur[j-1]
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// checkDiff verifies the invariants of diffLines and unifiedPatch for a pair.
func checkDiff(t *testing.T, old, new string) {
	t.Helper()
	checkParts(t, old, new, diffLines(old, new), true)
}

// checkParts verifies that parts rebuild both texts, alternate properly,
// are minimal when asked, and give a patch that applies.
func checkParts(t *testing.T, old, new string, parts []diffPart, minimal bool) {
	t.Helper()
	for i, p := range parts {
		if len(p.lines) == 0 || p.added && p.removed {
			t.Fatalf("bad part %d: %+v", i, p)
		}
		if i > 0 && parts[i-1].added == p.added && parts[i-1].removed == p.removed {
			t.Fatalf("parts %d and %d are of the same kind", i-1, i)
		}
		if i > 0 && parts[i-1].added && p.removed {
			t.Fatalf("an addition before a removal at part %d", i)
		}
	}
	var o, n strings.Builder
	common := 0
	for _, p := range parts {
		for _, l := range p.lines {
			if !p.added {
				o.WriteString(l)
			}
			if !p.removed {
				n.WriteString(l)
			}
		}
		if !p.changed() {
			common += len(p.lines)
		}
	}
	if o.String() != old || n.String() != new {
		t.Fatalf("parts do not rebuild the texts: %q %q", old, new)
	}
	if a, b := diffTokens(old), diffTokens(new); minimal && len(a)*len(b) < 1<<16 {
		if want := lcsLen(a, b); common != want {
			t.Fatalf("diff keeps %d common lines, the LCS has %d (%q → %q)", common, want, old, new)
		}
	}
	patch := unifiedPatch("f", parts, 4)
	got, err := applyUnifiedPatch(old, patch)
	if err != nil || got != new {
		t.Fatalf("patch does not apply (%v):\n%s\nold %q\nnew %q\ngot %q", err, patch, old, new, got)
	}
	if old != new {
		_, first := displayDiff(parts, old, new, 4)
		if first < 1 {
			t.Fatalf("no firstChangedLine for a change")
		}
	}
}

func TestEditPatchApplies(t *testing.T) {
	pairs := [][2]string{
		{"", "a\n"},
		{"a\n", ""},
		{"a", "b"},
		{"a\nb\nc", "a\nb\nc\n"},
		{"x\nx\nx\n", "x\ny\nx\n"},
		{"a\nb\na\nb\na\n", "b\na\nb\na\nb\n"},
		{numberedLines(1, 100, "l"), strings.Replace(numberedLines(1, 100, "l"), "l50\n", "", 1)},
	}
	for _, p := range pairs {
		checkDiff(t, p[0], p[1])
	}
}

// FuzzEditDiff checks that the diff is a minimal line diff, that the patch
// applies to the old text and yields the new one, and that nothing panics.
func FuzzEditDiff(f *testing.F) {
	f.Add("Hello, world!", "Hello, testing!")
	f.Add("a\nb\nc\n", "a\nc\n")
	f.Add("a\nb\na\nb\n", "b\na\nb\na")
	f.Add("\n\n\n", "\n")
	f.Fuzz(func(t *testing.T, old, new string) {
		checkDiff(t, old, new)
	})
}

// TestEditWindowedDiff: diffing only around the replacements gives the
// whole-file result on a big file with scattered edits, with a patch that
// applies.
func TestEditWindowedDiff(t *testing.T) {
	base := numberedLines(1, 2000, "line ")
	var reps []lfReplacement
	for _, n := range []int{1, 40, 41, 500, 560, 1999, 2000} {
		old := fmt.Sprintf("line %d\n", n)
		i := strings.Index(base, "\n"+old) + 1
		if n == 1 {
			i = 0
		}
		text := fmt.Sprintf("LINE %d\nextra %d\n", n, n)
		if n == 560 {
			text = "" // a deletion
		}
		reps = append(reps, lfReplacement{i, i + len(old), text})
	}
	reps = append(reps, lfReplacement{len(base), len(base), "tail\n"}) // an insertion at the end
	newText := applyLFReplacements(base, reps)
	got := editParts(base, newText, reps)
	checkParts(t, base, newText, got, false)
	whole := diffLines(base, newText)
	if gd, _ := displayDiff(got, base, newText, 4); func() bool { wd, _ := displayDiff(whole, base, newText, 4); return gd != wd }() {
		t.Errorf("windowed display diff differs from the whole-file one:\n%s", gd)
	}
	if unifiedPatch("f", got, 4) != unifiedPatch("f", whole, 4) {
		t.Error("windowed patch differs from the whole-file one")
	}
}

// TestEditDiffBound: past maxEdit the search gives up and the block
// fallback still yields a valid diff.
func TestEditDiffBound(t *testing.T) {
	old := numberedLines(1, 50, "a")
	new := "head\n" + numberedLines(1, 50, "b") + "a50\n"
	if _, ok := myersLines(diffTokens(old), diffTokens(new), 10); ok {
		t.Fatal("a 100-line change must exceed a bound of 10")
	}
	if _, ok := myersLines(diffTokens(old), diffTokens(new), 200); !ok {
		t.Fatal("a bound above the edit length must succeed")
	}
	parts := blockParts(diffTokens(old), diffTokens(new))
	checkParts(t, old, new, parts, false)
	if len(parts) != 3 || !parts[0].removed || !parts[1].added || parts[2].changed() {
		t.Errorf("block fallback parts: %+v", parts)
	}
}

// FuzzEditWindowedDiff: random replacements in a long text; the windowed
// diff must rebuild both texts and give a patch that applies.
func FuzzEditWindowedDiff(f *testing.F) {
	f.Add("a\nb\n\nc", uint64(1))
	f.Add("x", uint64(7))
	f.Fuzz(func(t *testing.T, text string, seed uint64) {
		r := rand.New(rand.NewPCG(seed, seed>>7))
		var b strings.Builder
		lines := strings.Split(text, "\n")
		for i := range 200 {
			if r.IntN(3) == 0 {
				b.WriteString(lines[r.IntN(len(lines))] + "\n")
			} else {
				fmt.Fprintf(&b, "l%d\n", i%50)
			}
		}
		base := b.String()
		var cuts []int
		for range 2 * (1 + r.IntN(5)) {
			cuts = append(cuts, r.IntN(len(base)+1))
		}
		slices.Sort(cuts)
		var reps []lfReplacement
		for i := 0; i < len(cuts); i += 2 {
			var text string
			for range r.IntN(4) {
				text += lines[r.IntN(len(lines))] + []string{"\n", "", "x\n"}[r.IntN(3)]
			}
			reps = append(reps, lfReplacement{cuts[i], cuts[i+1], text})
		}
		newText := applyLFReplacements(base, reps)
		checkParts(t, base, newText, editParts(base, newText, reps), false)
	})
}
