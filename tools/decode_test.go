package tools

import (
	"testing"
	"unicode/utf8"
)

func TestDecodeWHATWG(t *testing.T) {
	tests := []struct{ in, want string }{
		{"abc", "abc"},
		{"a\xffb", "a\uFFFDb"},
		{"\xe2\x82A", "\uFFFDA"},               // truncated 3-byte sequence: one U+FFFD
		{"\xe2\x82", "\uFFFD"},                 // at the end
		{"\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD"}, // surrogate: each byte
		{"\xc0\xaf", "\uFFFD\uFFFD"},           // overlong
		{"\xf0\x9f\x99\x82", "🙂"},
		{"\xf0\x9f\x99", "\uFFFD"},
		{"\xf4\x90\x80\x80", "\uFFFD\uFFFD\uFFFD\uFFFD"},
		{"\xef\xbb\xbfx", "\uFEFFx"}, // BOM kept
	}
	for _, tt := range tests {
		if got := decodeString([]byte(tt.in)); got != tt.want {
			t.Errorf("decode(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzDecodeChunks(f *testing.F) {
	f.Add([]byte("a\xe2\x82\xacb\xff"), 2)
	f.Fuzz(func(t *testing.T, b []byte, cut int) {
		whole := decodeString(b)
		if !utf8.ValidString(whole) {
			t.Fatalf("invalid output")
		}
		if utf8.Valid(b) && whole != string(b) {
			t.Fatalf("valid input changed")
		}
		if cut < 0 {
			cut = -cut
		}
		cut %= len(b) + 1
		var d utf8Decoder
		var out []byte
		n := d.feed(b[:cut], &out)
		n += d.feed(b[cut:], &out)
		n += d.flush(&out)
		if string(out) != whole || n != len(whole) {
			t.Fatalf("chunked %q != %q (n=%d)", out, whole, n)
		}
	})
}
