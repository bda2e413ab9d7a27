package tools

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEditFuzzyNormalization(t *testing.T) {
	cases := []struct{ in, want string }{
		{"，（）ＡＢＣ１２３", ",()ABC123"},               // NFKC: full-width ASCII
		{"e\u0301", "\u00e9"},                    // NFKC composes
		{"a  \t\nb \u00a0\n\u3000", "a\nb\n"},    // trailing whitespace per line
		{"\u2018x\u2019 \u201a\u201b", "'x' ''"}, // single quotes
		{"\u201cx\u201d\u201e\u201f", `"x"""`},   // double quotes
		{"\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-------"},
		{"a\u00a0b\u2002c\u2009d\u200ae\u202ff\u205fg\u3000h", "a b c d e f g h"},
		{"x\ufeff", "x"},       // U+FEFF is JavaScript whitespace
		{"x\u0085", "x\u0085"}, // U+0085 is not (NFKC keeps it)
		{"line\r", "line"},     // a lone CR is trimmed as whitespace
	}
	for _, c := range cases {
		if got := normalizeForFuzzyMatch(c.in); got != c.want {
			t.Errorf("normalizeForFuzzyMatch(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestEditCountOccurrences(t *testing.T) {
	cases := []struct {
		hay, needle string
		want        int
	}{
		{"aaaa", "aa", 2}, // non-overlapping
		{"abc", "x", 0},
		{"abc", "", 2}, // "abc".split("").length - 1
		{"", "", -1},   // "".split("") is []
		{"a😀", "", 2},  // UTF-16 code units
		{"x = 1\nx = 1\n", "x = 1\n", 2},
	}
	for _, c := range cases {
		if got := countOccurrences(c.hay, c.needle); got != c.want {
			t.Errorf("countOccurrences(%q, %q) = %d, want %d", c.hay, c.needle, got, c.want)
		}
	}
}

// TestEditApplyGolden covers every message and worked example of §7.3.
func TestEditApplyGolden(t *testing.T) {
	const p = "src/f.txt"
	e := func(pairs ...string) []editSpec {
		var out []editSpec
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, editSpec{OldText: pairs[i], NewText: pairs[i+1]})
		}
		return out
	}
	cases := []struct {
		name    string
		content string
		edits   []editSpec
		want    string // new LF text, or
		wantErr string
	}{
		{"simple", "Hello, world!", e("world", "testing"), "Hello, testing!", ""},
		{"empty single", "abc", e("", "x"), "", "oldText must not be empty in src/f.txt."},
		{"empty multi reports first index", "abc", e("a", "b", "", "x", "", "y"), "", "edits[1].oldText must not be empty in src/f.txt."},
		{"empty checked before matching", "abc", e("zzz", "b", "", "x"), "", "edits[1].oldText must not be empty in src/f.txt."},
		{"not found single", "abc", e("zzz", "x"), "", "Could not find the exact text in src/f.txt. The old text must match exactly including all whitespace and newlines."},
		{"not found multi", "abc", e("a", "A", "zzz", "x"), "", "Could not find edits[1] in src/f.txt. The oldText must match exactly including all whitespace and newlines."},
		{"duplicate single", "ab ab", e("ab", "x"), "", "Found 2 occurrences of the text in src/f.txt. The text must be unique. Please provide more context to make it unique."},
		{"duplicate multi", "ab ab c", e("c", "C", "ab", "x"), "", "Found 2 occurrences of edits[1] in src/f.txt. Each oldText must be unique. Please provide more context to make it unique."},
		{"per edit order: duplicate before a later not-found", "ab ab", e("ab", "x", "zzz", "y"), "", "Found 2 occurrences of edits[0] in src/f.txt. Each oldText must be unique. Please provide more context to make it unique."},
		{"duplicates counted in fuzzy space", "x = 1 \nx = 1\n", e("x = 1 \n", "y\n"), "", "Found 2 occurrences of the text in src/f.txt. The text must be unique. Please provide more context to make it unique."},
		{"CRLF and LF copies are duplicates", normalizeToLF("hello\r\nworld\nhello\nworld"), e("hello\nworld", "x"), "", "Found 2 occurrences of the text in src/f.txt. The text must be unique. Please provide more context to make it unique."},
		{"overlap", "abcdef", e("cde", "X", "abc", "Y"), "", "edits[1] and edits[0] overlap in src/f.txt. Merge them into one edit or target disjoint regions."},
		{"no change single", "abc", e("b", "b"), "", "No changes made to src/f.txt. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected."},
		{"no change multi", "abc", e("a", "a", "c", "c"), "", "No changes made to src/f.txt. The replacements produced identical content."},
		{"all against the original", "abc", e("a", "c", "c", "a"), "cba", ""},
		{"adjacent edits do not overlap", "abcdef", e("abc", "1", "def", "2"), "12", ""},
		{"newText literal", "abc", e("b", "$&$1$$"), "a$&$1$$c", ""},
		{"oldText CRLF normalized", "a\nb\n", e("a\r\nb", "x\r\ny"), "x\ny\n", ""},
		{"fuzzy keeps untouched lines", "keep  \nconsole.log(\u2018hello\u2019);\nafter  \n", e("console.log('hello');", "console.log('world');"),
			"keep  \nconsole.log('world');\nafter  \n", ""},
		{"fuzzy rewrites the whole touched line", "x \u201cq\u201d = \u2018a\u2019;  \ny\n", e("'a'", "'b'"), "x \"q\" = 'b';\ny\n", ""},
		{"fuzzy NFKC full-width", "say（ＨＩ）\nnext\n", e("say(HI)", "say(hi)"), "say(hi)\nnext\n", ""},
		{"fuzzy mode for all edits", "a\u2014b\nplain\n", e("a-b", "A", "plain", "PLAIN"), "A\nPLAIN\n", ""},
		{"fuzzy whitespace-only fix is a change", "a  \nb\n", e("a\nb", "a\nb"), "a\nb\n", ""},
		{"fuzzy line count differs", "abc\n\u2018q\u2019\n   ", e("'q'", "Q"), "", "Cannot preserve unchanged lines because the base content has a different line count."},
		{"whitespace-only oldText counts code units", "a b", e(" ", "_"), "", "Found 2 occurrences of the text in src/f.txt. The text must be unique. Please provide more context to make it unique."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := applyEdits(c.content, c.edits, p)
			if c.wantErr != "" {
				if err == nil || err.Error() != c.wantErr {
					t.Fatalf("err = %v\nwant %s", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.newText != c.want {
				t.Errorf("new = %q, want %q", got.newText, c.want)
			}
			if got.base != c.content {
				t.Errorf("base = %q, want the LF original", got.base)
			}
			if r := applyLFReplacements(got.base, got.reps); r != got.newText {
				t.Errorf("reps rebuild %q, want %q", r, got.newText)
			}
		})
	}
}

// checkEditInvariants asserts what must hold for any successful edit: the
// new text contains every newText, replacements are sorted and disjoint, the
// line-ending restore keeps the diff's line count, and the patch applies.
func checkEditInvariants(t *testing.T, content string, edits []editSpec) {
	t.Helper()
	lf := normalizeToLF(content)
	got, err := applyEdits(lf, edits, "f")
	if err != nil {
		if !strings.Contains(err.Error(), " f.") && !strings.HasPrefix(err.Error(), "Cannot preserve") && err != errOutsideBase {
			t.Fatalf("unexpected error text %q", err)
		}
		return
	}
	for _, e := range edits {
		if nt := normalizeToLF(e.NewText); !strings.Contains(got.newText, nt) {
			t.Fatalf("new text %q lacks newText %q", got.newText, nt)
		}
	}
	prev := 0
	for _, r := range got.reps {
		if r.start < prev || r.end < r.start || r.end > len(lf) {
			t.Fatalf("bad replacement %+v after %d in %d bytes", r, prev, len(lf))
		}
		prev = r.end
	}
	out := restoreLineEndings(content, got.reps)
	if normalizeToLF(out) != got.newText {
		t.Fatalf("written %q reads back as %q, the diff shows %q", out, normalizeToLF(out), got.newText)
	}
	if !strings.ContainsRune(content, '\r') && out != got.newText {
		t.Fatalf("LF file written as %q, want %q", out, got.newText)
	}
	parts := editParts(got.base, got.newText, got.reps)
	checkParts(t, got.base, got.newText, parts, strings.Count(got.base, "\n") <= diffWindow)
}

// FuzzEditMatch: applyEdits never panics, a success contains every newText,
// and the written file and patch stay consistent with the diff.
func FuzzEditMatch(f *testing.F) {
	f.Add("Hello, world!", "world", "testing", "", "")
	f.Add("keep  \nconsole.log(\u2018hello\u2019);\nafter  \n", "console.log('hello');", "console.log('world');", "after", "AFTER")
	f.Add("first\r\nsecond\r\nthird\r\n", "second\n", "REPLACED\nNEW\n", "third", "3")
	f.Add("a\r\nb\nc\r\n", "b\n", "B\nB2\n", "", "")
	f.Add("a\rb\rc", "b", "B\nB", "c", "C")
	f.Add("x\ny\rz", "z", "\nz", "", "")
	f.Add("x = 1 \nx = 1\n", "x = 1 \n", "y", "", "")
	f.Add("say（ＨＩ）  \n\u2014\n", "say(HI)", "s", "-", "+")
	f.Add("abc\n\u2018q\u2019\n   ", "'q'", "Q", "", "")
	f.Fuzz(func(t *testing.T, content, old1, new1, old2, new2 string) {
		if !utf8.ValidString(content) || !utf8.ValidString(old1) || !utf8.ValidString(new1) ||
			!utf8.ValidString(old2) || !utf8.ValidString(new2) {
			t.Skip("decoded file text and JSON strings are valid UTF-8")
		}
		edits := []editSpec{{old1, new1}}
		if old2 != "" || new2 != "" {
			edits = append(edits, editSpec{old2, new2})
		}
		checkEditInvariants(t, content, edits)
	})
}

func TestEditFuzzyIdempotent(t *testing.T) {
	for _, s := range []string{"a\u00a0 \n\u2019x\u2019", "ＡＢ  \n\u3000", "e\u0301\u2014"} {
		n := normalizeForFuzzyMatch(s)
		if normalizeForFuzzyMatch(n) != n {
			t.Errorf("normalization of %q is not idempotent", s)
		}
	}
}

// FuzzEditFuzzyNormalize: the normalization is idempotent, which fuzzy mode
// relies on (pi re-normalizes the normalized file and uses the offsets in
// the once-normalized text).
func FuzzEditFuzzyNormalize(f *testing.F) {
	f.Add("a\u00a0 \n\u2019x\u2019")
	f.Add("ＡＢ  \n\u3000e\u0301\u2014")
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			t.Skip()
		}
		n := normalizeForFuzzyMatch(s)
		if n2 := normalizeForFuzzyMatch(n); n2 != n {
			t.Fatalf("not idempotent: %q → %q → %q", s, n, n2)
		}
		if strings.Count(n, "\n") != strings.Count(s, "\n") {
			t.Fatalf("line count changed: %q → %q", s, n)
		}
	})
}
