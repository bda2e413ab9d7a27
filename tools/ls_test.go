package tools

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops/memfs"
)

func TestLsGolden(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *testEnv) {
		for _, f := range []string{"g/_under", "g/-dash", "g/.dot", "g/~tilde", "g/1num", "g/ä-umlaut", "g/a.txt", "g/b.txt", "g/B2.txt", "g/Zeta"} {
			e.put(f, nil)
		}
		e.mkdir("g/.hdir")
		e.mkdir("g/subdir")
		e.symlink("subdir", "g/linkdir")
		e.symlink("nowhere", "g/broken")
		e.mkdir("empty")
		e.put("lim/a", nil)
		e.symlink("missing", "lim/b")
		e.put("lim/c", nil)
		e.put("lim/d", nil)
		for i := range 600 {
			e.put(fmt.Sprintf("wide/%03d%s", i, strings.Repeat("n", 96)), nil)
		}
		ls := NewLs(e.b, e.b.Info())
		ctx := context.Background()
		golden := "_under\n-dash\n.dot\n.hdir/\n~tilde\n1num\nä-umlaut\na.txt\nb.txt\nB2.txt\nlinkdir/\nsubdir/\nZeta"
		tests := []struct{ args, text, details, err string }{
			{args: `{"path":"g"}`, text: golden},
			{args: `{"path":"` + e.wd + `/g/"}`, text: golden},
			{args: `{"path":"empty"}`, text: "(empty directory)"},
			{args: `{"path":"nope"}`, err: "Path not found: " + e.wd + "/nope"},
			{args: `{"path":"g/broken"}`, err: "Path not found: " + e.wd + "/g/broken"},
			{args: `{"path":"g/a.txt"}`, err: "Not a directory: " + e.wd + "/g/a.txt"},
			{args: `{"path":"g/linkdir"}`, text: "(empty directory)"},
			{args: `{"path":"lim","limit":2}`, text: "a\nc\n\n[2 entries limit reached. Use limit=4 for more]", details: `{"entryLimitReached":2}`},
			{args: `{"path":"lim","limit":3}`, text: "a\nc\nd"},
			{args: `{"path":"lim","limit":0}`, text: "a\n\n[1 entries limit reached. Use limit=2 for more]", details: `{"entryLimitReached":1}`},
			{args: `{"path":"lim","limit":2.9}`, text: "a\nc\n\n[2 entries limit reached. Use limit=4 for more]", details: `{"entryLimitReached":2}`},
			{args: `{"path":"lim","limit":-5}`, text: "a\n\n[1 entries limit reached. Use limit=2 for more]", details: `{"entryLimitReached":1}`},
		}
		for _, tt := range tests {
			text, details, errText, _ := call(t, ctx, ls, tt.args)
			if text != tt.text || details != tt.details || errText != tt.err {
				t.Errorf("ls %s:\n got  %q %s %q\n want %q %s %q", tt.args, text, details, errText, tt.text, tt.details, tt.err)
			}
		}

		// Bytes: 600 names of 99 bytes; 50 KiB holds 512 lines of 100.
		text, details, _, _ := call(t, ctx, ls, `{"path":"wide","limit":1000}`)
		var want []string
		for i := range 512 {
			want = append(want, fmt.Sprintf("%03d%s", i, strings.Repeat("n", 96)))
		}
		if text != strings.Join(want, "\n")+"\n\n[50.0KB limit reached]" {
			t.Errorf("wide: %s", trunc(text))
		}
		if !strings.HasPrefix(details, `{"truncation":{"content":"000n`) ||
			!strings.HasSuffix(details, `"truncated":true,"truncatedBy":"bytes","totalLines":600,"totalBytes":59999,"outputLines":512,"outputBytes":51199,"lastLinePartial":false,"firstLineExceedsLimit":false,"maxLines":9007199254740991,"maxBytes":51200}}`) {
			t.Errorf("wide details: %s", trunc(details))
		}
		text, _, _, _ = call(t, ctx, ls, `{"path":"wide"}`)
		if !strings.HasSuffix(text, "\n\n[500 entries limit reached. Use limit=1000 for more]") || strings.Count(text, "\n") != 501 {
			t.Errorf("default limit: %s", trunc(text))
		}
		text, details, _, _ = call(t, ctx, ls, `{"path":"wide","limit":550}`)
		if !strings.HasSuffix(text, "\n\n[550 entries limit reached. 50.0KB limit reached. Only the first 512 entries fit: a larger limit shows no more, use find with a pattern or bash for the rest]") ||
			!strings.HasPrefix(details, `{"entryLimitReached":550,"truncation":{`) {
			t.Errorf("both notices: %s %s", trunc(text), trunc(details))
		}

		actx, cancel := context.WithCancel(ctx)
		cancel()
		if _, _, errText, _ := call(t, actx, ls, `{}`); errText != "Operation aborted" {
			t.Errorf("aborted: %q", errText)
		}
	})
}

func TestLsDefaultsAndErrors(t *testing.T) {
	m := memfs.New()
	m.AddFile("/work/x", nil, 0o644)
	m.AddFile("/home/user/h", nil, 0o644)
	m.AddDir("/work/locked", 0o000)
	m.AddFile("/work/bad\xffname", nil, 0o644) // dropped, as in pi
	ls := NewLs(m, m.Info())
	ctx := context.Background()
	for args, want := range map[string]string{`{}`: "locked/\nx", `{"path":null}`: "locked/\nx", `{"path":"~"}`: "h"} {
		if text, _, errText, _ := call(t, ctx, ls, args); text != want {
			t.Errorf("ls %s: %q %q", args, text, errText)
		}
	}
	if _, _, errText, _ := call(t, ctx, ls, `{"path":"locked"}`); errText != "Cannot read directory: EACCES: permission denied, scandir '/work/locked'" {
		t.Errorf("locked: %q", errText)
	}
}

func TestSortNamesCollation(t *testing.T) {
	names := []string{"b", "B", "a b", "a-b", "a_b", "a.b", "ab", "é", "e", "f", "10", "9", "A"}
	sortNames(names)
	// Digits compare as text ("10" < "9"), a prefix sorts first, "b" and
	// "B" tie and keep their input order.
	got := strings.Join(names, "|")
	if got != "10|9|A|a b|a_b|a-b|a.b|ab|b|B|e|é|f" {
		t.Errorf("order: %s", got)
	}
}

// Broken links spread over several stat batches: the limit counts only
// listed entries, and a remaining name (even one that would be dropped)
// makes the notice appear, as in pi's sequential walk.
func TestLsLimitAcrossBatches(t *testing.T) {
	m := memfs.New()
	var files []string
	for i := range 200 {
		name := fmt.Sprintf("e%03d", i)
		m.AddFile("/work/d/"+name, nil, 0o644)
		m.AddSymlink("missing", "/work/d/"+name+"b")
		files = append(files, name)
	}
	ls := NewLs(m, m.Info())
	for _, c := range []struct {
		limit  int
		text   string
		notice bool
	}{
		{100, strings.Join(files[:100], "\n"), true},
		{199, strings.Join(files[:199], "\n"), true},
		{200, strings.Join(files, "\n"), true}, // "e199b" remains
		{201, strings.Join(files, "\n"), false},
	} {
		text, details, _, _ := call(t, context.Background(), ls, fmt.Sprintf(`{"path":"d","limit":%d}`, c.limit))
		want := c.text
		if c.notice {
			want += fmt.Sprintf("\n\n[%d entries limit reached. Use limit=%d for more]", c.limit, 2*c.limit)
		}
		if text != want || (details != "") != c.notice {
			t.Errorf("limit %d: %s %s", c.limit, trunc(text), details)
		}
	}
}
