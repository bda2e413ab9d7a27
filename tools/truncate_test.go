package tools

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncateHeadGolden(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		maxLines  int
		maxBytes  int
		want      string
		by        truncatedBy
		outLines  int
		outBytes  int
		total     int
		firstOver bool
	}{
		{"fits", "a\nb\n", 2000, 51200, "a\nb\n", byNone, 2, 4, 2, false},
		{"empty", "", 2000, 51200, "", byNone, 0, 0, 0, false},
		{"bytes cut whole line", "éé\nabc", 2000, 4, "éé", byBytes, 1, 4, 2, false},
		{"first line over", "éé\nabc", 2000, 3, "", byBytes, 0, 0, 2, true},
		{"lines", "a\nb\nc\n", 2, 51200, "a\nb", byLines, 2, 3, 3, false},
		{"lines and bytes at once", "ab\ncd\nef", 2, 5, "ab\ncd", byLines, 2, 5, 3, false},
		{"bytes before lines", "ab\ncd\nef", 3, 4, "ab", byBytes, 1, 2, 3, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := truncateHead(tt.in, tt.maxLines, tt.maxBytes)
			if got.Content != tt.want || got.TruncatedBy != tt.by || got.OutputLines != tt.outLines ||
				got.OutputBytes != tt.outBytes || got.TotalLines != tt.total || got.FirstLineExceedsLimit != tt.firstOver {
				t.Errorf("truncateHead(%q) = %+v", tt.in, got)
			}
			if got.Truncated != (tt.by != byNone) || got.TotalBytes != len(tt.in) {
				t.Errorf("truncateHead(%q) truncated/totalBytes = %+v", tt.in, got)
			}
		})
	}
}

func TestTruncateTailGolden(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		maxLines int
		maxBytes int
		want     string
		by       truncatedBy
		outLines int
		partial  bool
	}{
		{"partial emoji kept", "aé🙂b", 2000, 5, "🙂b", byBytes, 1, true},
		{"partial empty", "abc🙂", 2000, 3, "", byBytes, 1, true},
		{"lines", "1\n2\n3\n4\n", 2, 51200, "3\n4", byLines, 2, false},
		{"huge last line", strings.Repeat("X", 300000) + "\n", 100, 1024, strings.Repeat("X", 1024), byBytes, 1, true},
		{"bytes", "aaaa\nbb\ncc", 2000, 5, "bb\ncc", byBytes, 2, false},
		{"fits", "x\n", 1, 2, "x\n", byNone, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := truncateTail(tt.in, tt.maxLines, tt.maxBytes)
			if got.Content != tt.want || got.TruncatedBy != tt.by || got.OutputLines != tt.outLines ||
				got.LastLinePartial != tt.partial || got.OutputBytes != len(tt.want) {
				t.Errorf("truncateTail(%q) = %+v", tt.in[:min(len(tt.in), 40)], got)
			}
		})
	}
}

func TestTruncationJSON(t *testing.T) {
	b, err := json.Marshal(truncateHead("a", 10, 10))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"content":"a","truncated":false,"truncatedBy":null,"totalLines":1,"totalBytes":1,"outputLines":1,"outputBytes":1,"lastLinePartial":false,"firstLineExceedsLimit":false,"maxLines":10,"maxBytes":10}`
	if string(b) != want {
		t.Errorf("got %s\nwant %s", b, want)
	}
	b, _ = json.Marshal(truncateHead("a\nb", 1, 10))
	if !strings.Contains(string(b), `"truncatedBy":"lines"`) {
		t.Errorf("got %s", b)
	}
	var back truncation
	if err := json.Unmarshal(b, &back); err != nil || back.TruncatedBy != byLines {
		t.Errorf("round trip: %+v %v", back, err)
	}
}

func TestTruncateLine(t *testing.T) {
	a501 := strings.Repeat("a", 501)
	got, cut := truncateLine(a501, 500)
	if !cut || len(got) != 515 || got != strings.Repeat("a", 500)+"... [truncated]" {
		t.Errorf("501 chars: %d %v", len(got), cut)
	}
	if got, cut := truncateLine(strings.Repeat("a", 500), 500); cut || len(got) != 500 {
		t.Errorf("500 chars cut")
	}
	// A surrogate pair at units 499-500 is dropped whole.
	s := strings.Repeat("a", 499) + "🙂" + "b"
	if got, cut := truncateLine(s, 500); !cut || got != strings.Repeat("a", 499)+"... [truncated]" {
		t.Errorf("surrogate split: %q", got)
	}
	// 250 emoji = 500 units: fits.
	if _, cut := truncateLine(strings.Repeat("🙂", 250), 500); cut {
		t.Errorf("250 emoji cut")
	}
	// "é" is one unit.
	if got, cut := truncateLine(strings.Repeat("é", 501), 500); !cut || utf8.RuneCountInString(got) != 515 {
		t.Errorf("é: %q", got)
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int]string{
		0: "0B", 1023: "1023B", 1024: "1.0KB", 1536: "1.5KB", 51200: "50.0KB",
		1048575: "1024.0KB", 1048576: "1.0MB", 1 << 30: "1024.0MB",
	} {
		if got := formatSize(n); got != want {
			t.Errorf("formatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func checkTruncation(t *testing.T, s string, got truncation, maxLines, maxBytes int, head bool) {
	t.Helper()
	if got.TotalBytes != len(s) || got.TotalLines != len(splitLines(s)) {
		t.Fatalf("totals %+v", got)
	}
	if got.OutputBytes != len(got.Content) {
		t.Fatalf("outputBytes %d != %d", got.OutputBytes, len(got.Content))
	}
	if !got.Truncated {
		if got.Content != s {
			t.Fatalf("untruncated content changed")
		}
		return
	}
	if got.OutputBytes > maxBytes || got.OutputLines > maxLines {
		t.Fatalf("over limits: %+v", got)
	}
	if head {
		if !strings.HasPrefix(s, got.Content) {
			t.Fatalf("head output is not a prefix")
		}
	} else if !strings.HasSuffix(strings.TrimSuffix(s, "\n"), got.Content) {
		t.Fatalf("tail output is not a suffix")
	}
	if utf8.ValidString(s) && !utf8.ValidString(got.Content) {
		t.Fatalf("split a character: %q", got.Content)
	}
}

func FuzzTruncateHead(f *testing.F) {
	f.Add("éé\nabc", 2000, 4)
	f.Add("a\nb\nc\n", 2, 100)
	f.Fuzz(func(t *testing.T, s string, maxLines, maxBytes int) {
		maxLines, maxBytes = 1+abs(maxLines)%50, abs(maxBytes)%200
		checkTruncation(t, s, truncateHead(s, maxLines, maxBytes), maxLines, maxBytes, true)
	})
}

func FuzzTruncateTail(f *testing.F) {
	f.Add("aé🙂b", 2000, 5)
	f.Add("1\n2\n3\n4\n", 2, 100)
	f.Fuzz(func(t *testing.T, s string, maxLines, maxBytes int) {
		maxLines, maxBytes = 1+abs(maxLines)%50, abs(maxBytes)%200
		checkTruncation(t, s, truncateTail(s, maxLines, maxBytes), maxLines, maxBytes, false)
	})
}

func FuzzTruncateLine(f *testing.F) {
	f.Add("aaa🙂", 4)
	f.Fuzz(func(t *testing.T, s string, n int) {
		n = abs(n) % 600
		got, cut := truncateLine(s, n)
		if !cut {
			if got != s || utf16Len(s) > n {
				t.Fatalf("not cut: %q", got)
			}
			return
		}
		kept := strings.TrimSuffix(got, "... [truncated]")
		if !strings.HasPrefix(s, kept) || utf16Len(kept) > n || utf16Len(kept) < n-1 {
			t.Fatalf("cut %q to %q", s, got)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		if n == -n {
			return 0
		}
		return -n
	}
	return n
}
