package helper_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

// TestRunSpill: the helper saves the output in the target once it passes
// the thresholds, from its first byte, capped with the note; a short output
// leaves no file.
func TestRunSpill(t *testing.T) {
	b := open(t)
	sr := b.(ops.SpillRunner)
	dir := t.TempDir()
	for _, c := range []struct {
		name    string
		command string
		want    string // the file's content, "" for none
	}{
		{"short", "printf 'a\\nb\\n'", ""},
		{"lines", "seq 1 3000", seqText(1, 3000)},
		{"bytes", "head -c 60000 /dev/zero | tr '\\0' x", strings.Repeat("x", 60000)},
		{"capped", "head -c 200000 /dev/zero | tr '\\0' y", strings.Repeat("y", 100000) + "\n[capped]\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &ops.Spill{Path: filepath.Join(dir, c.name, "out.log"), AfterBytes: 50000, AfterLines: 2000, Cap: 100000, CapNote: "\n[capped]\n"}
			var out bytes.Buffer
			if err := sr.RunSpill(t.Context(), &ops.Cmd{Command: c.command, Output: &out}, s); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(s.Path)
			if c.want == "" {
				if s.Created || !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("created %v, read %v", s.Created, err)
				}
				return
			}
			if err != nil || !s.Created || s.Err != nil {
				t.Fatalf("created %v, err %v, read %v", s.Created, s.Err, err)
			}
			if string(data) != c.want {
				t.Errorf("file holds %d bytes %.40q…, want %d", len(data), data, len(c.want))
			}
			if fi, _ := os.Stat(s.Path); fi.Mode().Perm() != 0o600 {
				t.Errorf("mode %v", fi.Mode())
			}
			if !strings.HasPrefix(c.want, out.String()[:min(out.Len(), 100)]) || out.Len() < min(len(c.want), 100000) {
				t.Errorf("output %d bytes", out.Len())
			}
		})
	}
}

// TestRunSpillFull: a spill file that cannot grow (a full disk: here the
// helper's file size limit) stops being written, says why, and neither
// blocks the output nor the timeout: yes with a 3 s timeout returns in
// about 3 s, its output still streaming.
func TestRunSpillFull(t *testing.T) {
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_FSIZE, &old); err != nil {
		testenv.SkipOrFail(t, "RLIMIT_FSIZE: "+err.Error())
	}
	// The helper started now inherits the limit; this process does not keep it.
	lim := unix.Rlimit{Cur: 256 << 10, Max: old.Max}
	if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &lim); err != nil {
		testenv.SkipOrFail(t, "RLIMIT_FSIZE: "+err.Error())
	}
	b := open(t)
	unix.Setrlimit(unix.RLIMIT_FSIZE, &old)

	sr := b.(ops.SpillRunner)
	s := &ops.Spill{Path: filepath.Join(t.TempDir(), "out.log"), AfterBytes: 50000, AfterLines: 2000, Cap: 1 << 30, CapNote: "\n[capped]\n"}
	var n countWriter
	start := time.Now()
	err := sr.RunSpill(t.Context(), &ops.Cmd{Command: "yes", Output: &n, Timeout: 3 * time.Second}, s)
	took := time.Since(start)
	var te *ops.TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("err %v, want a timeout", err)
	}
	if took > 6*time.Second {
		t.Errorf("took %v", took)
	}
	if !s.Created || s.Err == nil || ops.ErrnoOf(s.Err) == "" {
		t.Errorf("created %v, err %v", s.Created, s.Err)
	}
	if n.n <= 256<<10 {
		t.Errorf("output %d bytes: it stopped with the file", n.n)
	}
	fi, err := os.Stat(s.Path)
	if err != nil || fi.Size() > 256<<10 {
		t.Errorf("file %v %v", fi, err)
	}
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

func seqText(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		b.WriteString(strconv.Itoa(i))
		b.WriteByte('\n')
	}
	return b.String()
}

// skipCounter is an ops.OutputSkipper that counts.
type skipCounter struct {
	countWriter
	skipped ops.SkippedOutput
	skips   int
}

func (s *skipCounter) SkipOutput(k ops.SkippedOutput) { s.skipped = k; s.skips++ }

// TestRunSpillSkip: with Skip, past SkipAfter bytes only the last SkipHold
// bytes cross, after one skip frame counting the rest; the file has all.
func TestRunSpillSkip(t *testing.T) {
	b := open(t)
	sr := b.(ops.SpillRunner)
	s := &ops.Spill{Path: filepath.Join(t.TempDir(), "out.log"), AfterBytes: 50000, AfterLines: 2000, Cap: 1 << 30, Skip: true, SkipAfter: 2 << 20, SkipHold: 1 << 20}
	var out skipCounter
	const total = 20000000
	if err := sr.RunSpill(t.Context(), &ops.Cmd{Command: "yes abcdefghi | head -c " + strconv.Itoa(total), Output: &out}, s); err != nil {
		t.Fatal(err)
	}
	if out.skips != 1 || out.n > 4<<20 || out.n+out.skipped.Raw != total {
		t.Errorf("received %d bytes, %d skip frames, skipped %+v", out.n, out.skips, out.skipped)
	}
	// "abcdefghi\n" from offset SkipAfter on: the newlines and the bytes
	// after the last one in the skipped part.
	var nl, last int64
	for x := int64(s.SkipAfter); x < int64(s.SkipAfter)+out.skipped.Raw; x++ {
		if x%10 == 9 {
			nl, last = nl+1, 0
		} else {
			last++
		}
	}
	if out.skipped.Newlines != nl || out.skipped.LastLine != last || out.skipped.Decoded != out.skipped.Raw {
		t.Errorf("skipped %+v, want %d newlines, last line %d", out.skipped, nl, last)
	}
	if fi, err := os.Stat(s.Path); err != nil || fi.Size() != total {
		t.Errorf("file %v %v", fi, err)
	}
}
