package tools

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops/memfs"
)

// TestEditRefusesLargeFiles: a file over maxEditBytes is refused before it
// is read, with a text that points to bash; one at the limit is edited.
func TestEditRefusesLargeFiles(t *testing.T) {
	m, tool := newEditEnv(t)
	opened := 0
	if err := m.AddGenerated("/work/big.txt", maxEditBytes+1, func() io.ReadCloser {
		opened++
		return io.NopCloser(strings.NewReader("line1\n" + strings.Repeat("x", maxEditBytes-5)))
	}); err != nil {
		t.Fatal(err)
	}
	_, _, errText, _ := call(t, context.Background(), tool, `{"path":"big.txt","edits":[{"oldText":"line1","newText":"X"}]}`)
	want := "Could not edit file: big.txt. It is 16.0MB, larger than the 16.0MB the edit tool handles. Use bash to change it instead (e.g. sed -i 's/old/new/' big.txt)."
	if errText != want || opened != 0 {
		t.Errorf("error %q (file opened %d times), want %q before any read", errText, opened, want)
	}
	addFile(t, m, "/work/limit.txt", "line1\n"+strings.Repeat("y", maxEditBytes-6))
	if text, _, errText, _ := call(t, context.Background(), tool, `{"path":"limit.txt","edits":[{"oldText":"line1","newText":"X"}]}`); errText != "" {
		t.Errorf("file at the limit: %q %q", trunc(text), errText)
	}
}

// TestEditReadBoundedWhenTheFileGrew: a file whose stat is small but whose
// content runs on (it grew, or the backend reports no size) is read only
// up to the limit.
func TestEditReadBoundedWhenTheFileGrew(t *testing.T) {
	m := memfs.New()
	if err := m.AddGenerated("/work/grows.txt", 10, func() io.ReadCloser {
		return io.NopCloser(io.MultiReader(strings.NewReader("line1\n"), endlessReader{}))
	}); err != nil {
		t.Fatal(err)
	}
	_, err := readBounded(context.Background(), m, "/work/grows.txt", nil, 10, 1<<20)
	if _, ok := err.(*tooLargeError); !ok {
		t.Errorf("readBounded of an endless file: %v, want *tooLargeError", err)
	}
}

type endlessReader struct{}

func (endlessReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'z'
	}
	return len(p), nil
}

// TestEditDetailsCutLongLines: a line longer than maxDiffLineBytes shows in
// the diff and the patch cut, with the number of bytes left out.
func TestEditDetailsCutLongLines(t *testing.T) {
	long := strings.Repeat("é", 100<<10) // 200 KiB
	base := "line1\n" + long + "\n"
	newText := "X\n" + long + "\n"
	d := computeEditDetails("f", base, newText, []lfReplacement{{0, 5, "X"}})
	cut := long[:maxDiffLineBytes] + "… [" + fmt.Sprint(len(long)-maxDiffLineBytes) + " more bytes]"
	if want := "-1 line1\n+1 X\n 2 " + cut; d.Diff != want {
		t.Errorf("diff %q…, want %q…", trunc(d.Diff), trunc(want))
	}
	if want := "--- f\n+++ f\n@@ -1,2 +1,2 @@\n-line1\n+X\n " + cut + "\n"; d.Patch != want {
		t.Errorf("patch %q, want %q", trunc(d.Patch), trunc(want))
	}
}

// TestEditWindowedDiffWithHoles: between windows far apart the unchanged
// lines are not split out (a hole), and the display diff and the patch are
// still the whole-file ones.
func TestEditWindowedDiffWithHoles(t *testing.T) {
	base := numberedLines(1, 4*maxGapLines, "line ")
	var reps []lfReplacement
	for _, n := range []int{10, 2 * maxGapLines, 4 * maxGapLines} {
		old := fmt.Sprintf("line %d\n", n)
		i := strings.Index(base, "\n"+old) + 1
		reps = append(reps, lfReplacement{i, i + len(old), fmt.Sprintf("LINE %d\n", n)})
	}
	newText := applyLFReplacements(base, reps)
	got := editParts(base, newText, reps)
	holes := 0
	for _, p := range got {
		if p.hidden > 0 {
			holes++
		}
	}
	if holes != 2 {
		t.Errorf("%d runs with a hole, want 2", holes)
	}
	whole := diffLines(base, newText)
	gd, gf := displayDiff(got, base, newText, 4)
	wd, wf := displayDiff(whole, base, newText, 4)
	if gd != wd || gf != wf {
		t.Errorf("display diff with holes differs from the whole-file one:\n%s\nwant\n%s", gd, wd)
	}
	if gp, wp := unifiedPatch("f", got, 4), unifiedPatch("f", whole, 4); gp != wp {
		t.Errorf("patch with holes differs from the whole-file one:\n%s\nwant\n%s", gp, wp)
	}
}
