package search

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

func ctxFile() string {
	var b strings.Builder
	for i := 1; i <= 20; i++ {
		switch i {
		case 3, 5, 12, 20:
			b.WriteString("line match\n")
		default:
			b.WriteString("line\n")
		}
	}
	return b.String()
}

// repoTree is a git repository exercising the ignore rules.
func repoTree(t *testing.T) string {
	return mkTree(t, map[string]string{
		".git/HEAD":            "hello ref\n",
		".gitignore":           "*.log\n/build/\n!keep.log\nsub/deep/\n# comment\n\n",
		".ignore":              "ign.txt\n",
		"a.txt":                "hello world\nfoo\nHello again\n",
		"app.log":              "hello log\n",
		"keep.log":             "hello keep\n",
		"build/out.txt":        "hello build\n",
		"sub/build/x.txt":      "hello subbuild\n",
		"sub/deep/y.txt":       "hello deep\n",
		"sub/.gitignore":       "local.txt\n",
		"sub/local.txt":        "hello local\n",
		"sub/b.md":             "hello md\n",
		"sub/src/c.ts":         "hello ts\n",
		".hidden/h.txt":        "hello hidden\n",
		"ign.txt":              "hello ign\n",
		"bin.dat":              "hello\x00bin\n",
		"uni.txt":              "café 123 ٣\nnaïve\u00a0x\nfoo_bar\nétéb\n",
		"ctx.txt":              ctxFile(),
		"crlf.txt":             "hello\r\nx\rhello y\nhello z\r",
		"bom8.txt":             "\ufeffbom start\n",
		"bom16.txt":            "\xff\xfeb\x00o\x00m\x00 \x00s\x00i\x00x\x00t\x00e\x00e\x00n\x00\n\x00",
		"nested/.gitignore":    "*.txt\n!important.txt\n",
		"nested/skip.txt":      "hello skip\n",
		"nested/important.txt": "hello important\n",
	})
}

type grepCase struct {
	name string
	q    ops.GrepQuery
	want []string // engine output, in order
}

func grepCases(root string) []grepCase {
	return []grepCase{
		{"gitignore", ops.GrepQuery{Pattern: "hello", Path: root}, []string{
			".hidden/h.txt:1: hello hidden",
			"a.txt:1: hello world",
			"crlf.txt:1: hello",
			"crlf.txt:2: x\rhello y",
			"crlf.txt:3: hello z\r",
			"keep.log:1: hello keep",
			"nested/important.txt:1: hello important",
			"sub/b.md:1: hello md",
			"sub/build/x.txt:1: hello subbuild",
			"sub/src/c.ts:1: hello ts",
		}},
		{"ignore-case", ops.GrepQuery{Pattern: "HELLO", Path: filepath.Join(root, "a.txt"), IgnoreCase: true}, []string{
			"a.txt:1: hello world", "a.txt:3: Hello again",
		}},
		{"literal", ops.GrepQuery{Pattern: "o.w", Path: root, Literal: true}, nil},
		{"regex-dot", ops.GrepQuery{Pattern: "o.w", Path: root}, []string{"a.txt:1: hello world"}},
		{"glob-basename", ops.GrepQuery{Pattern: "hello", Path: root, Glob: "*.md"}, []string{"sub/b.md:1: hello md"}},
		{"glob-negated", ops.GrepQuery{Pattern: "hello", Path: root, Glob: "!*.txt"}, []string{
			"keep.log:1: hello keep", "sub/b.md:1: hello md", "sub/src/c.ts:1: hello ts",
		}},
		{"glob-anchored", ops.GrepQuery{Pattern: "hello", Path: root, Glob: "sub/**/*.ts"}, []string{"sub/src/c.ts:1: hello ts"}},
		{"glob-anchored-miss", ops.GrepQuery{Pattern: "hello", Path: root, Glob: "src/*.ts"}, nil},
		// A --glob include beats .gitignore (ripgrep 13's override precedence).
		{"glob-overrides-gitignore", ops.GrepQuery{Pattern: "hello", Path: root, Glob: "*.log"}, []string{
			"app.log:1: hello log", "keep.log:1: hello keep",
		}},
		{"context-merged", ops.GrepQuery{Pattern: "match", Path: filepath.Join(root, "ctx.txt"), Context: 2}, []string{
			"ctx.txt-1- line", "ctx.txt-2- line", "ctx.txt:3: line match", "ctx.txt-4- line",
			"ctx.txt:5: line match", "ctx.txt-6- line", "ctx.txt-7- line",
			"ctx.txt-10- line", "ctx.txt-11- line", "ctx.txt:12: line match", "ctx.txt-13- line", "ctx.txt-14- line",
			"ctx.txt-18- line", "ctx.txt-19- line", "ctx.txt:20: line match",
		}},
		{"unicode-d", ops.GrepQuery{Pattern: `\d \d`, Path: root, Glob: "uni.txt"}, []string{"uni.txt:1: café 123 ٣"}},
		{"unicode-d-arabic", ops.GrepQuery{Pattern: `3 \d$`, Path: root, Glob: "uni.txt"}, []string{"uni.txt:1: café 123 ٣"}},
		{"unicode-w", ops.GrepQuery{Pattern: `^\w+ `, Path: root, Glob: "uni.txt"}, []string{"uni.txt:1: café 123 ٣"}},
		{"unicode-s", ops.GrepQuery{Pattern: `e\sx`, Path: root, Glob: "uni.txt"}, []string{"uni.txt:2: naïve\u00a0x"}},
		{"unicode-W", ops.GrepQuery{Pattern: `f\W1`, Path: root, Glob: "uni.txt"}, nil},
		{"unicode-S-class", ops.GrepQuery{Pattern: `^[\S]+$`, Path: root, Glob: "uni.txt"}, []string{"uni.txt:3: foo_bar", "uni.txt:4: étéb"}},
		{"unicode-b", ops.GrepQuery{Pattern: `é\b`, Path: root, Glob: "uni.txt"}, []string{"uni.txt:1: café 123 ٣"}},
		{"unicode-b-start", ops.GrepQuery{Pattern: `\bété`, Path: root, Glob: "uni.txt"}, []string{"uni.txt:4: étéb"}},
		{"unicode-B", ops.GrepQuery{Pattern: `\Bté\B`, Path: root, Glob: "uni.txt"}, []string{"uni.txt:4: étéb"}},
		{"unicode-b-ignorecase", ops.GrepQuery{Pattern: `\bCAFÉ\b`, Path: root, IgnoreCase: true, Glob: "uni.txt"}, []string{"uni.txt:1: café 123 ٣"}},
		{"bom", ops.GrepQuery{Pattern: `^bom`, Path: root}, []string{"bom16.txt:1: bom sixteen", "bom8.txt:1: bom start"}},
		{"empty-pattern", ops.GrepQuery{Pattern: "", Path: root, Glob: "crlf.txt"}, []string{"crlf.txt:1: hello", "crlf.txt:2: x\rhello y", "crlf.txt:3: hello z\r"}},
		{"dollar-before-cr", ops.GrepQuery{Pattern: `hello$`, Path: root, Glob: "crlf.txt"}, nil},
		{"binary-explicit", ops.GrepQuery{Pattern: "hello", Path: filepath.Join(root, "bin.dat")}, []string{"bin.dat:1: hello\x00bin"}},
		{"nested-negation", ops.GrepQuery{Pattern: "hello", Path: filepath.Join(root, "nested")}, []string{"important.txt:1: hello important"}},
	}
}

func TestGrepGolden(t *testing.T) {
	root := repoTree(t)
	for _, c := range grepCases(root) {
		t.Run(c.name, func(t *testing.T) {
			got, err := collectGrep(t, engineGrep, c.q)
			if err != nil {
				t.Fatal(err)
			}
			if !equal(got, c.want) {
				t.Errorf("got\n%q\nwant\n%q", got, c.want)
			}
		})
	}
}

// TestGrepAgainstRG runs every golden query through the real ripgrep (with
// pi's argv, via GrepWithRG) and compares, order-insensitive across files.
func TestGrepAgainstRG(t *testing.T) {
	needTool(t, "rg")
	root := repoTree(t)
	for _, c := range grepCases(root) {
		t.Run(c.name, func(t *testing.T) {
			got, err := collectGrep(t, rgGrep, c.q)
			if err != nil {
				t.Fatal(err)
			}
			if !equal(sortedByFile(got), sortedByFile(c.want)) {
				t.Errorf("rg gave\n%q\nengine wants\n%q", sortedByFile(got), sortedByFile(c.want))
			}
		})
	}
}

func TestGrepNoGitRepo(t *testing.T) {
	root := mkTree(t, map[string]string{
		".gitignore": "skip.txt\n",
		".ignore":    "ign.txt\n",
		"skip.txt":   "hit\n",
		"ign.txt":    "hit\n",
		"keep.txt":   "hit\n",
	})
	want := []string{".gitignore:1: skip.txt", "keep.txt:1: hit", "skip.txt:1: hit"}
	q := ops.GrepQuery{Pattern: "hit|skip", Path: root}
	got, err := collectGrep(t, engineGrep, q)
	if err != nil || !equal(got, want) {
		t.Fatalf("engine: %q, %v; want %q", got, err, want)
	}
	needTool(t, "rg")
	got, err = collectGrep(t, rgGrep, q)
	if err != nil || !equal(sortedByFile(got), want) {
		t.Fatalf("rg: %q, %v; want %q", got, err, want)
	}
}

func TestGrepParentGitignore(t *testing.T) {
	root := mkTree(t, map[string]string{
		".git/":          "",
		".gitignore":     "*.gen\nsub/x.txt\n",
		"sub/a.gen":      "hit\n",
		"sub/x.txt":      "hit\n",
		"sub/y.txt":      "hit\n",
		"sub/.hid/z.txt": "hit\n",
	})
	q := ops.GrepQuery{Pattern: "hit", Path: filepath.Join(root, "sub")}
	want := []string{".hid/z.txt:1: hit", "y.txt:1: hit"}
	got, err := collectGrep(t, engineGrep, q)
	if err != nil || !equal(got, want) {
		t.Fatalf("engine: %q, %v; want %q", got, err, want)
	}
	needTool(t, "rg")
	got, err = collectGrep(t, rgGrep, q)
	if err != nil || !equal(sortedByFile(got), want) {
		t.Fatalf("rg: %q, %v; want %q", got, err, want)
	}
}

func TestGrepMaxMatches(t *testing.T) {
	root := repoTree(t)
	file := filepath.Join(root, "ctx.txt")
	cases := []struct {
		max, ctx int
		want     []string
	}{
		{1, 0, []string{"ctx.txt:3: line match"}},
		// Trailing context of the last match, cut at the next match.
		{1, 2, []string{"ctx.txt-1- line", "ctx.txt-2- line", "ctx.txt:3: line match", "ctx.txt-4- line"}},
		{3, 2, []string{"ctx.txt-1- line", "ctx.txt-2- line", "ctx.txt:3: line match", "ctx.txt-4- line",
			"ctx.txt:5: line match", "ctx.txt-6- line", "ctx.txt-7- line",
			"ctx.txt-10- line", "ctx.txt-11- line", "ctx.txt:12: line match", "ctx.txt-13- line", "ctx.txt-14- line"}},
		{4, 1, []string{"ctx.txt-2- line", "ctx.txt:3: line match", "ctx.txt-4- line",
			"ctx.txt:5: line match", "ctx.txt-6- line",
			"ctx.txt-11- line", "ctx.txt:12: line match", "ctx.txt-13- line",
			"ctx.txt-19- line", "ctx.txt:20: line match"}},
	}
	for _, c := range cases {
		q := ops.GrepQuery{Pattern: "match", Path: file, Context: c.ctx, MaxMatches: c.max}
		got, err := collectGrep(t, engineGrep, q)
		if err != nil || !equal(got, c.want) {
			t.Errorf("engine max=%d ctx=%d: %q, %v\nwant %q", c.max, c.ctx, got, err, c.want)
		}
		if _, err := exec.LookPath("rg"); err == nil {
			got, err = collectGrep(t, rgGrep, q)
			if err != nil || !equal(got, c.want) {
				t.Errorf("rg max=%d ctx=%d: %q, %v\nwant %q", c.max, c.ctx, got, err, c.want)
			}
		}
	}
	// Across files the search stops at the limit.
	got, err := collectGrep(t, engineGrep, ops.GrepQuery{Pattern: "hello", Path: root, MaxMatches: 2})
	want := []string{".hidden/h.txt:1: hello hidden", "a.txt:1: hello world"}
	if err != nil || !equal(got, want) {
		t.Errorf("engine max=2: %q, %v; want %q", got, err, want)
	}
}

func TestGrepBadPattern(t *testing.T) {
	root := repoTree(t)
	_, err := collectGrep(t, engineGrep, ops.GrepQuery{Pattern: "(foo", Path: root})
	if !errors.Is(err, ops.ErrBadPattern) {
		t.Fatalf("err = %v, want ErrBadPattern", err)
	}
	const want = "regex parse error: missing closing ): `(foo`"
	if err.Error() != want {
		t.Fatalf("text = %q, want %q", err.Error(), want)
	}
	_, err = collectGrep(t, engineGrep, ops.GrepQuery{Pattern: `a\nb`, Path: root})
	if err == nil || err.Error() != `regex parse error: the literal '"\n"' is not allowed in a regex` {
		t.Fatalf("newline: %v", err)
	}
	// The literal form of the same pattern is fine.
	got, err := collectGrep(t, engineGrep, ops.GrepQuery{Pattern: "(foo", Path: root, Literal: true})
	if err != nil || got != nil {
		t.Fatalf("literal: %q, %v", got, err)
	}
}

func TestGrepMissingPath(t *testing.T) {
	_, err := collectGrep(t, engineGrep, ops.GrepQuery{Pattern: "x", Path: "/nonexistent/dir"})
	if ops.ErrnoOf(err) != ops.ENOENT {
		t.Fatalf("err = %v, want ENOENT", err)
	}
}

func TestGrepBinaryWalked(t *testing.T) {
	big := strings.Repeat("a", 70000)
	root := mkTree(t, map[string]string{
		"early.bin": "hello\x00\n",
		"late.bin":  "hello 1\n" + big + "\nhello 2\n\x00\n",
	})
	got, err := collectGrep(t, engineGrep, ops.GrepQuery{Pattern: "hello", Path: root})
	want := []string{"late.bin:1: hello 1", "late.bin:3: hello 2"}
	if err != nil || !equal(got, want) {
		t.Fatalf("%q, %v; want %q", got, err, want)
	}
}

// TestGrepLargeFileAgainstRG crosses several read chunks, with a line longer
// than a chunk, context windows spanning chunk boundaries and a last line
// without "\n".
func TestGrepLargeFileAgainstRG(t *testing.T) {
	var b strings.Builder
	for i := 1; b.Len() < 3*chunkSize; i++ {
		switch {
		case i == 5000:
			b.WriteString(strings.Repeat("x", chunkSize+100) + " needle long\n")
		case i%997 == 0 || i%1999 == 1:
			fmt.Fprintf(&b, "needle %d\n", i)
		case i%1499 == 7:
			fmt.Fprintf(&b, "Über NEEDLE %d straße\n", i)
		default:
			fmt.Fprintf(&b, "filler line %d\n", i)
		}
	}
	b.WriteString("last needle")
	root := mkTree(t, map[string]string{"big.txt": b.String()})
	for _, q := range []ops.GrepQuery{
		{Pattern: "needle", Path: root},
		{Pattern: "needle", Path: root, Context: 3},
		{Pattern: `^needle \d+$`, Path: root, Context: 1},
		{Pattern: `\bneedle\b`, Path: root},
		{Pattern: "(?i)needle", Path: root},
		{Pattern: "über", Path: root, IgnoreCase: true, Context: 2},
		{Pattern: "ÜBER|straße", Path: root},
		{Pattern: `(?i)needle \d+`, Path: root, Context: 1},
	} {
		want, err := collectGrep(t, engineGrep, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) < 20 {
			t.Fatalf("only %d events", len(want))
		}
		if _, err := exec.LookPath("rg"); err != nil {
			continue
		}
		got, err := collectGrep(t, rgGrep, q)
		if err != nil || !equal(got, want) {
			t.Errorf("%+v: rg differs (%v): %d vs %d events", q, err, len(got), len(want))
			for i := range min(len(got), len(want)) {
				if got[i] != want[i] {
					t.Errorf("first difference at %d: rg %.80q engine %.80q", i, got[i], want[i])
					break
				}
			}
		}
	}
}

// TestRGPatternError: a pattern only rg rejects still fails with the
// one-line text.
func TestRGPatternError(t *testing.T) {
	needTool(t, "rg")
	root := repoTree(t)
	_, err := collectGrep(t, rgGrep, ops.GrepQuery{Pattern: `a\/b`, Path: root})
	if !errors.Is(err, ops.ErrBadPattern) || err.Error() != "regex parse error: unrecognized escape sequence" {
		t.Fatalf("err = %v", err)
	}
}
