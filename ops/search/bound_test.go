package search

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// TestGrepLongLineBounded: a line over maxLineBytes is
// searched and reported in its first maxLineBytes (Truncated set), the rest
// of it is skipped, and the lines after it keep their numbers.
func TestGrepLongLineBounded(t *testing.T) {
	long := strings.Repeat("x", maxLineBytes+1000) + "tail-match"
	root := mkTree(t, map[string]string{"f.txt": "a\n" + long + "\nafter match\n" + long})
	name := filepath.Join(root, "f.txt")
	var evs []ops.GrepEvent
	err := GrepFS(context.Background(), osFS{}, &ops.GrepQuery{Pattern: "x|match", Path: name}, func(ev ops.GrepEvent) error {
		evs = append(evs, ev)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range evs {
		got = append(got, fmt.Sprintf("%d %v %d", ev.Line, ev.Truncated, len(ev.Text)))
	}
	want := []string{
		fmt.Sprintf("2 true %d", maxLineBytes),
		"3 false 11",
		fmt.Sprintf("4 true %d", maxLineBytes),
	}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("events (line, truncated, text bytes) %q, want %q", got, want)
	}
	// A match only past the bound is not found (ripgrep would find it).
	n := 0
	GrepFS(context.Background(), osFS{}, &ops.GrepQuery{Pattern: "tail-match", Path: name}, func(ops.GrepEvent) error { n++; return nil })
	if n != 0 {
		t.Errorf("%d matches past the line bound, want 0 (documented)", n)
	}
}

// TestGrepMaxText: Text keeps MaxText bytes of a line, context lines too.
func TestGrepMaxText(t *testing.T) {
	root := mkTree(t, map[string]string{"f.txt": "before line\nthe match line\nshort\n"})
	var got []string
	err := GrepFS(context.Background(), osFS{}, &ops.GrepQuery{Pattern: "match", Path: root, Context: 1, MaxText: 6}, func(ev ops.GrepEvent) error {
		got = append(got, fmt.Sprintf("%s %v", fmtEvent(ev), ev.Truncated))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"f.txt-1- before true", "f.txt:2: the ma true", "f.txt-3- short false"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("events %q, want %q", got, want)
	}
}

// TestGrepParallelBatches: files whose events exceed a batch many times
// over are still reported whole and in walk order.
func TestGrepParallelBatches(t *testing.T) {
	files := map[string]string{}
	line := "hit " + strings.Repeat("y", 200) + "\n"
	perFile := 3 * batchBytes / len(line)
	for i := range 12 {
		files[fmt.Sprintf("f%02d.txt", i)] = strings.Repeat(line, perFile)
	}
	root := mkTree(t, files)
	var got []string
	err := GrepFS(context.Background(), osFS{}, &ops.GrepQuery{Pattern: "hit", Path: root}, func(ev ops.GrepEvent) error {
		got = append(got, fmt.Sprintf("%s:%d", ev.Path, ev.Line))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 12 {
		for l := 1; l <= perFile; l++ {
			want = append(want, fmt.Sprintf("f%02d.txt:%d", i, l))
		}
	}
	if !equal(got, want) {
		t.Errorf("%d events, want %d in walk order", len(got), len(want))
	}
}

// TestLineWriterBoundsALine: an output line over maxWireLine is an error,
// not a buffer that grows without end.
func TestLineWriterBoundsALine(t *testing.T) {
	canceled := false
	w := &lineWriter{handle: func([]byte) error { return nil }, cancel: func() { canceled = true }}
	chunk := bytes.Repeat([]byte("z"), 1<<20)
	for range maxWireLine>>20 + 2 {
		w.Write(chunk)
	}
	if w.err == nil || !canceled || len(w.buf) > maxWireLine+len(chunk) {
		t.Errorf("err %v, canceled %v, buffer %d bytes", w.err, canceled, len(w.buf))
	}
}
