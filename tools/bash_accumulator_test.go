package tools

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func bashDecodeChunks(chunks ...[]byte) string {
	var d utf8Decoder
	var out []byte
	for _, c := range chunks {
		d.feed(c, &out)
	}
	d.flush(&out)
	return string(out)
}

// TestBashUTF8StreamWHATWG pins the TextDecoder bashFFFD rules Node uses:
// one U+FFFD per maximal invalid subsequence.
func TestBashUTF8StreamWHATWG(t *testing.T) {
	const r = "\uFFFD"
	for in, want := range map[string]string{
		"":                 "",
		"abc":              "abc",
		"é🙂€":              "é🙂€",
		"\xff":             r,
		"a\x80b":           "a" + r + "b",
		"\xe2\x82A":        r + "A",   // truncated 3-byte sequence: one U+FFFD
		"\xf0\x9f\x99":     r,         // truncated at the end of the stream
		"\xf0\x9f\x99\xf0": r + r,     // a new lead byte ends the first sequence
		"\xc0\x80":         r + r,     // overlong: C0 is never valid
		"\xe0\x80\x80":     r + r + r, // E0 needs A0..BF next
		"\xed\xa0\x80":     r + r + r, // surrogates are invalid
		"\xf4\x90\x80\x80": r + r + r + r,
		"\xef\xbf\xbd":     r, // a real U+FFFD stays one
		"a\xe2\x82\xacb":   "a€b",
	} {
		if got := bashDecodeChunks([]byte(in)); got != want {
			t.Errorf("decode(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestBashUTF8StreamSplits decodes a mixed sample cut at every pair of
// positions; the result must equal the one-shot decoding.
func TestBashUTF8StreamSplits(t *testing.T) {
	sample := []byte("aé\xe2\x82A🙂\xff€\xf0\x9f\x99\n\xed\xa0\x80z\xc3")
	want := bashDecodeChunks(sample)
	for i := 0; i <= len(sample); i++ {
		for j := i; j <= len(sample); j++ {
			if got := bashDecodeChunks(sample[:i], sample[i:j], sample[j:]); got != want {
				t.Fatalf("split %d,%d: %q, want %q", i, j, got, want)
			}
		}
	}
	// Byte by byte.
	var chunks [][]byte
	for i := range sample {
		chunks = append(chunks, sample[i:i+1])
	}
	if got := bashDecodeChunks(chunks...); got != want {
		t.Fatalf("byte by byte: %q, want %q", got, want)
	}
}

func bashFeed(a *outputAccumulator, s string, chunk int) {
	for s != "" {
		n := min(chunk, len(s))
		a.append([]byte(s[:n]))
		s = s[n:]
	}
}

func TestBashAccumulatorCounts(t *testing.T) {
	for _, c := range []struct {
		in                        string
		lines, lastLine, raw, dec int64
	}{
		{"", 0, 0, 0, 0},
		{"a\nb", 2, 1, 3, 3},
		{"a\nb\n", 2, 0, 4, 4},
		{"\n", 1, 0, 1, 1},
		{"é", 1, 2, 2, 2},
		{"x\xff", 1, 4, 2, 4}, // U+FFFD is 3 bytes decoded
		{"\xe2\x82", 1, 3, 2, 3},
	} {
		for _, chunk := range []int{1, 2, 1000} {
			a := newOutputAccumulator(defaultMaxLines, defaultMaxBytes, nil)
			bashFeed(a, c.in, chunk)
			a.finish()
			if a.totalLines() != c.lines || a.lastLineBytes != c.lastLine || a.rawBytes != c.raw || a.decodedBytes != c.dec {
				t.Errorf("%q/%d: lines %d last %d raw %d decoded %d; want %d %d %d %d", c.in, chunk,
					a.totalLines(), a.lastLineBytes, a.rawBytes, a.decodedBytes, c.lines, c.lastLine, c.raw, c.dec)
			}
		}
	}
}

// TestBashAccumulatorMatchesWholeOutput compares snapshots of the rolling tail
// with truncateTail of the whole output, for short lines (where the two
// must agree) under random chunking.
func TestBashAccumulatorMatchesWholeOutput(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		name    string
		maxLine int
		total   int
	}{
		{"few bytes", 10, 3000},
		{"by lines", 20, 500000},
		{"by bytes", 300, 700000},
		{"fits", 40, 40000},
	} {
		t.Run(c.name, func(t *testing.T) {
			var full strings.Builder
			for full.Len() < c.total {
				n := rng.IntN(c.maxLine)
				for range n {
					full.WriteByte(byte('a' + rng.IntN(26)))
				}
				if rng.IntN(10) == 0 {
					full.WriteString("é")
				}
				full.WriteByte('\n')
			}
			if rng.IntN(2) == 0 {
				full.WriteString("unterminated")
			}
			s := full.String()
			a := newOutputAccumulator(defaultMaxLines, defaultMaxBytes, nil)
			for rest := s; rest != ""; {
				n := min(1+rng.IntN(9000), len(rest))
				a.append([]byte(rest[:n]))
				rest = rest[n:]
				if len(a.tail) > 2*rollingTailBytes {
					t.Fatalf("tail grew to %d", len(a.tail))
				}
			}
			a.finish()
			got, want := a.snapshot(), truncateTail(s, defaultMaxLines, defaultMaxBytes)
			if got != want {
				t.Errorf("snapshot differs from truncateTail of the whole output:\n got %+v\nwant %+v",
					bashSummary(got), bashSummary(want))
			}
		})
	}
}

func bashSummary(t truncation) truncation {
	t.Content = bashTailOf(t.Content, 40)
	return t
}

func TestBashAccumulatorPartialFirstLine(t *testing.T) {
	t.Run("dropped", func(t *testing.T) {
		a := newOutputAccumulator(defaultMaxLines, defaultMaxBytes, nil)
		bashFeed(a, strings.Repeat("A", 250000), 65536)
		bashFeed(a, "\nshort\n", 65536)
		a.finish()
		if a.tailAtLineStart {
			t.Fatal("tail should have been cut inside the long line")
		}
		got := a.snapshot()
		// pi keeps the trailing newline here: the tail alone fits.
		if got.Content != "short\n" || !got.Truncated || got.TruncatedBy != byBytes || got.TotalLines != 2 ||
			got.TotalBytes != 250007 || got.OutputLines != 1 {
			t.Errorf("snapshot %+v", bashSummary(got))
		}
	})
	t.Run("kept when nothing else", func(t *testing.T) {
		a := newOutputAccumulator(defaultMaxLines, defaultMaxBytes, nil)
		bashFeed(a, strings.Repeat("A", 250000)+"\n", 65536)
		a.finish()
		got := a.snapshot()
		if got.Content != strings.Repeat("A", 51200) || !got.LastLinePartial || got.TotalLines != 1 || a.lastLineBytes != 0 {
			t.Errorf("snapshot %+v, last line %d", bashSummary(got), a.lastLineBytes)
		}
	})
	t.Run("no newline at all", func(t *testing.T) {
		a := newOutputAccumulator(defaultMaxLines, defaultMaxBytes, nil)
		bashFeed(a, strings.Repeat("é", 200000), 7)
		a.finish()
		got := a.snapshot()
		if got.Content != strings.Repeat("é", 25600) || !got.LastLinePartial || got.TotalBytes != 400000 || a.lastLineBytes != 400000 {
			t.Errorf("snapshot %+v, last line %d", bashSummary(got), a.lastLineBytes)
		}
	})
	t.Run("multi-byte cut", func(t *testing.T) {
		// The cut lands inside a character and moves forward to its end.
		a := newOutputAccumulator(defaultMaxLines, defaultMaxBytes, nil)
		bashFeed(a, "x"+strings.Repeat("🙂", 60000), 4096)
		if a.tail[0]&0xC0 == 0x80 || len(a.tail) > 2*rollingTailBytes {
			t.Errorf("tail starts with a continuation byte or is %d bytes", len(a.tail))
		}
	})
}

func TestBashAccumulatorHugeChunk(t *testing.T) {
	// One 8 MiB chunk must not leave an 8 MiB tail behind.
	a := newOutputAccumulator(defaultMaxLines, defaultMaxBytes, nil)
	big := bytes.Repeat([]byte("0123456789abcde\n"), 1<<19)
	a.append(big)
	if len(a.tail) != rollingTailBytes || !a.tailAtLineStart {
		t.Errorf("tail %d bytes, at line start %v", len(a.tail), a.tailAtLineStart)
	}
	if a.totalLines() != 1<<19 || a.decodedBytes != int64(len(big)) {
		t.Errorf("lines %d bytes %d", a.totalLines(), a.decodedBytes)
	}
}

func TestBashHeadTail(t *testing.T) {
	const half = structuredCap / 2
	rng := rand.New(rand.NewPCG(3, 4))
	for _, size := range []int{0, 10, structuredCap, structuredCap + 1, 3*structuredCap + 17} {
		var full []byte
		for len(full) < size {
			full = append(full, []string{"a", "é", "🙂", "\n"}[rng.IntN(4)]...)
		}
		full = full[:size]
		var h bashHeadTail
		for rest := full; len(rest) > 0; {
			n := min(1+rng.IntN(200000), len(rest))
			h.add(rest[:n])
			rest = rest[n:]
		}
		want := string(full)
		if size > structuredCap {
			head, tail := full[:half], full[len(full)-half:]
			if i := bashLastRuneStart(head); !utf8.FullRune(head[i:]) {
				head = head[:i]
			}
			for len(tail) > 0 && tail[0]&0xC0 == 0x80 {
				tail = tail[1:]
			}
			want = string(head) + "\n\n[... " + strconv.Itoa(len(full)-len(head)-len(tail)) + " bytes omitted ...]\n\n" + string(tail)
		}
		if got := h.text(); got != want {
			t.Errorf("size %d: got %d bytes, want %d", size, len(got), len(want))
		}
	}
}

// FuzzBashUTF8Stream: decoding in three chunks equals decoding at once, and
// agrees with read's decoder (both follow the WHATWG rules).
func FuzzBashUTF8Stream(f *testing.F) {
	f.Add([]byte("aé\xe2\x82A🙂\xff€\xf0\x9f\x99\n\xed\xa0\x80z\xc3"), uint16(3), uint16(9))
	f.Add([]byte("\xf4\x90\x80\x80\xe0\x80"), uint16(1), uint16(2))
	f.Fuzz(func(t *testing.T, data []byte, i, j uint16) {
		a := int(i) % (len(data) + 1)
		b := a + int(j)%(len(data)-a+1)
		whole := bashDecodeChunks(data)
		if got := bashDecodeChunks(data[:a], data[a:b], data[b:]); got != whole {
			t.Fatalf("split %d,%d: %q, want %q", a, b, got, whole)
		}
		if other := decodeString(data); other != whole {
			t.Fatalf("bash decoder %q, read's decoder %q", whole, other)
		}
	})
}

// FuzzBashAccumulator: for any bytes in any chunking, the counts and the
// snapshot equal those computed on the whole decoded output (inputs this
// small never roll the tail).
func FuzzBashAccumulator(f *testing.F) {
	f.Add([]byte("a\nb\xff\n\xe2\x82"), uint8(2))
	f.Add([]byte(strings.Repeat("x\n", 2100)), uint8(7))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		a := newOutputAccumulator(defaultMaxLines, defaultMaxBytes, nil)
		step := int(chunk)%64 + 1
		for rest := data; len(rest) > 0; {
			n := min(step, len(rest))
			a.append(rest[:n])
			rest = rest[n:]
		}
		a.finish()
		text := decodeString(data)
		want := truncateTail(text, defaultMaxLines, defaultMaxBytes)
		if got := a.snapshot(); got != want {
			t.Fatalf("snapshot %+v\nwant %+v", bashSummary(got), bashSummary(want))
		}
		last := text[strings.LastIndexByte(text, '\n')+1:]
		if a.lastLineBytes != int64(len(last)) || a.rawBytes != int64(len(data)) || a.decodedBytes != int64(len(text)) {
			t.Fatalf("last line %d raw %d decoded %d", a.lastLineBytes, a.rawBytes, a.decodedBytes)
		}
	})
}
