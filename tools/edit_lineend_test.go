package tools

import (
	"testing"
	"unicode/utf8"
)

// TestEditDecodeUTF8: the decoding edit relies on (Node's, WHATWG maximal
// subparts).
func TestEditDecodeUTF8(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain \u00e9\U0001F600", "plain \u00e9\U0001F600"},
		{"a\xffb", "a\uFFFDb"},
		{"\xe2\x82A", "\uFFFDA"},                         // truncated 3-byte sequence: one U+FFFD
		{"\xf0\x9f\x98", "\uFFFD"},                       // truncated 4-byte sequence at the end
		{"\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD"},           // surrogate: ED is a subpart alone
		{"\xe0\x80\x80", "\uFFFD\uFFFD\uFFFD"},           // overlong
		{"\xc0\xaf", "\uFFFD\uFFFD"},                     // C0 is never valid
		{"\x80\x80", "\uFFFD\uFFFD"},                     // stray continuation bytes
		{"\xef\xbf\xbd", "\uFFFD"},                       // a real U+FFFD stays one
		{"\xf4\x90\x80\x80", "\uFFFD\uFFFD\uFFFD\uFFFD"}, // above U+10FFFF
	}
	for _, c := range cases {
		if got := decodeString([]byte(c.in)); got != c.want {
			t.Errorf("decodeString(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestEditStripBOMAndLF(t *testing.T) {
	if bom, s := stripBOM("\uFEFFx\uFEFF"); bom != "\uFEFF" || s != "x\uFEFF" {
		t.Errorf("stripBOM = %q %q", bom, s)
	}
	if bom, s := stripBOM("x"); bom != "" || s != "x" {
		t.Errorf("stripBOM = %q %q", bom, s)
	}
	if got := normalizeToLF("a\r\nb\rc\n\r\r\n"); got != "a\nb\nc\n\n\n" {
		t.Errorf("normalizeToLF = %q", got)
	}
}

// TestEditLineEndingsGolden runs §7.4's cases through matching and restore.
func TestEditLineEndingsGolden(t *testing.T) {
	cases := []struct {
		name, content, old, new, want string
	}{
		{"CRLF file", "first\r\nsecond\r\nthird\r\n", "second\n", "REPLACED\nNEW\n", "first\r\nREPLACED\r\nNEW\r\nthird\r\n"},
		{"mixed file keeps each line's ending", "a\r\nb\nc\r\n", "b\n", "B\nB2\n", "a\r\nB\nB2\nc\r\n"},
		{"mixed file, CRLF line", "a\r\nb\nc\r\n", "a", "A\nA2", "A\r\nA2\r\nb\nc\r\n"},
		{"oldText across endings", "a\r\nb\nc\r\n", "a\nb", "X\nY", "X\r\nY\nc\r\n"},
		{"lone CR file", "a\rb\rc", "b", "B\nB2", "a\rB\rB2\rc"},
		{"last line takes the previous ending", "a\r\nb", "b", "c\nd", "a\r\nc\r\nd"},
		{"LF file untouched", "a\nb\n", "a", "x\ny", "x\ny\nb\n"},
		{"lone CR then LF would fuse: deletion", "a\rx\nb", "x", "", "a\r\n\nb"},
		{"lone CR then LF would fuse: insertion", "x\ny\rz", "z", "\nz", "x\ny\r\n\nz"},
		{"fuzzy in a CRLF file", "keep  \r\nconsole.log(\u2018hello\u2019);\r\nafter  \r\n", "console.log('hello');", "console.log('world');",
			"keep  \r\nconsole.log('world');\r\nafter  \r\n"},
		{"no line break at all", "abc", "b", "\n", "a\nc"},
		{"untouched LF line in a CRLF-first file (pi #8544)", "a\r\nb\nc", "c", "C", "a\r\nb\nC"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := applyEdits(normalizeToLF(c.content), []editSpec{{c.old, c.new}}, "f")
			if err != nil {
				t.Fatal(err)
			}
			out := restoreLineEndings(c.content, got.reps)
			if out != c.want {
				t.Errorf("written %q, want %q", out, c.want)
			}
			if normalizeToLF(out) != got.newText {
				t.Errorf("written text reads back as %q, the diff shows %q", normalizeToLF(out), got.newText)
			}
		})
	}
}

func TestEditOrigOffsets(t *testing.T) {
	orig := "a\r\nb\rc\n"
	// LF text: "a\nb\nc\n" (6 bytes).
	got := origOffsets(orig, []int{0, 1, 2, 3, 4, 5, 6})
	want := []int{0, 1, 3, 4, 5, 6, 7}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("origOffsets = %v, want %v", got, want)
		}
	}
}

func FuzzEditDecodeUTF8(f *testing.F) {
	f.Add([]byte("a\xffb\xe2\x82"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := decodeString(b)
		if !utf8.ValidString(s) {
			t.Fatalf("decodeString(%q) = %q is not valid UTF-8", b, s)
		}
		if utf8.Valid(b) && s != string(b) {
			t.Fatalf("valid input changed: %q → %q", b, s)
		}
	})
}
