package tools

import (
	"context"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops/local"
	"github.com/pi-sandbox/pi-sandbox/ops/memfs"
)

// linesReader produces size bytes of 64-byte text lines without holding
// them: a huge file that costs no memory or disk.
type linesReader struct {
	block []byte
	left  int64
	off   int
}

func newLinesReader(size int64) io.ReadCloser {
	line := strings.Repeat("abcdefghij", 6) + "xyz\n" // 64 bytes
	return &linesReader{block: []byte(strings.Repeat(line, 1024)), left: size}
}

func (r *linesReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(int64(len(p)), r.left)], r.block[r.off:])
	r.off = (r.off + n) % len(r.block)
	r.left -= int64(n)
	return n, nil
}

func (r *linesReader) Close() error { return nil }

// hugeFileEnv returns a memfs holding /work/huge.txt, size bytes of lines;
// lineCount adds the line-count capability (read then stops streaming
// after the displayed part).
func hugeFileEnv(tb testing.TB, size int64, lineCount bool) *readTool {
	m := memfs.New()
	if err := m.AddGenerated("/work/huge.txt", size, func() io.ReadCloser { return newLinesReader(size) }); err != nil {
		tb.Fatal(err)
	}
	if lineCount {
		return NewRead(lineCountMem{m}, m.Info()).(*readTool)
	}
	return NewRead(m, m.Info()).(*readTool)
}

const gib = 1 << 30

// TestReadHugeFileBoundedMemory reads page one of a 256 MiB file and checks
// that read allocated a bounded amount, whatever the size.
func TestReadHugeFileBoundedMemory(t *testing.T) {
	size := int64(256 << 20)
	if raceEnabled || testing.Short() {
		size = 32 << 20
	}
	for _, lc := range []bool{false, true} {
		read := hugeFileEnv(t, size, lc)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		text, details, errText, _ := call(t, context.Background(), read, `{"path":"huge.txt"}`)
		runtime.ReadMemStats(&after)
		lines := int(size / 64)
		if errText != "" || !strings.HasSuffix(text, "\n\n[Showing lines 1-800 of "+itoa(lines+1)+" (50.0KB limit). Use offset=801 to continue.]") {
			t.Fatalf("lineCount=%v: %q %s", lc, trunc(text), errText)
		}
		if !strings.Contains(details, `"totalLines":`+itoa(lines)+`,"totalBytes":`+itoa(int(size))+`,`) {
			t.Errorf("lineCount=%v details: %s", lc, trunc(details))
		}
		// The stored window, the 64 KiB read buffer, the result and its
		// JSON: well under 2 MiB.
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 2<<20 {
			t.Errorf("lineCount=%v: read of a %d MiB file allocated %d bytes", lc, size>>20, alloc)
		}
	}
}

// BenchmarkReadPageOne1GiB reports bytes/op for page one of a 1 GiB file:
// streamed to the end (no line-count capability) and with the capability.
func BenchmarkReadPageOne1GiB(b *testing.B) {
	for _, c := range []struct {
		name string
		lc   bool
	}{{"stream", false}, {"linecount", true}} {
		b.Run(c.name, func(b *testing.B) {
			read := hugeFileEnv(b, gib, c.lc)
			args := map[string]any{"path": "huge.txt"}
			b.ReportAllocs()
			b.SetBytes(gib)
			for b.Loop() {
				if _, err := read.Execute(context.Background(), "id", args, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadPageOneLocalFile reads page one of the file named by
// $PI_SANDBOX_READ_BENCH_FILE through the local backend (skipped when
// unset): make bench can point it at a generated 1 GiB file.
func BenchmarkReadPageOneLocalFile(b *testing.B) {
	name := os.Getenv("PI_SANDBOX_READ_BENCH_FILE")
	if name == "" {
		b.Skip("PI_SANDBOX_READ_BENCH_FILE not set")
	}
	be, err := local.New(context.Background(), local.Config{WorkDir: "/", NoHelper: true})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	read := NewRead(be, be.Info())
	args := map[string]any{"path": name}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := read.Execute(context.Background(), "id", args, nil); err != nil {
			b.Fatal(err)
		}
	}
}
