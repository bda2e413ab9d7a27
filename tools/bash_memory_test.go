package tools

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

// The 1 GiB memory check runs in a child process (this test binary again),
// so its peak RSS (VmHWM) is the bash tool's and not the rest of the suite's.
const bashMemChildEnv = "PI_SANDBOX_BASH_MEM_CHILD"

const (
	bashMemTotal = 1 << 30
	bashMemChunk = 64 << 10
	bashMemLimit = 64 << 20
)

// bashCountingFS accepts the spill file and counts its bytes.
type bashCountingFS struct {
	ops.FS
	n *int64
}

func (bashCountingFS) Stat(_ context.Context, name string) (fs.FileInfo, error) {
	return bashDirInfo{name}, nil
}

func (f bashCountingFS) OpenWriter(context.Context, string, int, fs.FileMode) (io.WriteCloser, error) {
	return bashCountingWriter{f.n}, nil
}

type bashCountingWriter struct{ n *int64 }

func (w bashCountingWriter) Write(p []byte) (int, error) { *w.n += int64(len(p)); return len(p), nil }
func (w bashCountingWriter) Close() error                { return nil }

// runBash1GiB pushes 1 GiB of mixed output (lines, multi-byte characters
// split across chunks) through the tool in 64 KiB chunks.
func runBash1GiB() (*loop.Result, int64, error) { return runBashVolume(bashMemTotal) }

// runBashVolume pushes total bytes (a multiple of 64 KiB) through the tool.
func runBashVolume(total int) (*loop.Result, int64, error) {
	// A continuous stream of a 13-byte line; since 64 Ki is not a multiple
	// of 13, chunk boundaries fall at every offset, inside "€" too.
	const line = "abcdefghi€\n"
	buf := []byte(strings.Repeat(line, bashMemChunk/len(line)+2))
	r := &bashFakeRunner{fn: func(_ context.Context, cmd *ops.Cmd) error {
		off := 0
		for range total / bashMemChunk {
			cmd.Output.Write(buf[off : off+bashMemChunk])
			off = (off + bashMemChunk) % len(line)
		}
		return nil
	}}
	var spilled int64
	updates := 0
	tool := NewBash(r, bashCountingFS{n: &spilled}, bashTestInfo())
	res, err := tool.Execute(context.Background(), "mem", map[string]any{"command": "x"}, func(*loop.Result) { updates++ })
	return res, spilled, err
}

func TestBashMemoryChild(t *testing.T) {
	if os.Getenv(bashMemChildEnv) != "1" {
		t.Skip("runs only as the child of TestBashMemory1GiB")
	}
	start := time.Now()
	res, spilled, err := runBash1GiB()
	if err != nil {
		t.Fatal(err)
	}
	if spilled != bashMemTotal {
		t.Fatalf("spilled %d bytes, want %d", spilled, bashMemTotal)
	}
	if !strings.Contains(res.Content[0].Text, "\n\n[Showing lines 82593526-82595525 of 82595525. Full output: /spill/pi-bash-") {
		t.Fatalf("text ends %q", bashTailOf(res.Content[0].Text, 200))
	}
	fmt.Printf("BASHMEM elapsed=%d\n", time.Since(start).Milliseconds())
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			fmt.Printf("BASHMEM %s\n", strings.Join(strings.Fields(l), " "))
		}
	}
}

// measureBash1GiB runs the child and returns its peak RSS in bytes.
func measureBash1GiB(tb testing.TB) (int64, time.Duration) {
	tb.Helper()
	if runtime.GOOS != "linux" {
		tb.Skip("VmHWM is Linux-only")
	}
	if raceEnabled {
		tb.Skip("the race detector's shadow memory makes an RSS figure meaningless")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestBashMemoryChild$", "-test.count=1", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), bashMemChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("child: %v\n%s", err, out)
	}
	var hwm int64 = -1
	var elapsed time.Duration
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 4 && f[0] == "BASHMEM" && f[1] == "VmHWM:" && f[3] == "kB":
			kb, _ := strconv.ParseInt(f[2], 10, 64)
			hwm = kb << 10
		case len(f) == 2 && strings.HasPrefix(f[1], "elapsed="):
			ms, _ := strconv.Atoi(strings.TrimPrefix(f[1], "elapsed="))
			elapsed = time.Duration(ms) * time.Millisecond
		}
	}
	if hwm < 0 {
		tb.Fatalf("no VmHWM in child output:\n%s", out)
	}
	return hwm, elapsed
}

// TestBashMemory1GiB: 1 GiB of output through the tool stays under 64 MiB
// peak RSS (bounded memory whatever the output size). Under the
// race detector, whose shadow memory inflates RSS and which makes 1 GiB take
// a minute, the Go heap is sampled in process for 64 MiB of output instead:
// a heap peak well under the volume shows the output is not retained.
func TestBashMemory1GiB(t *testing.T) {
	if testing.Short() {
		t.Skip("1 GiB of output; skipped with -short")
	}
	if raceEnabled {
		const volume, limit = 64 << 20, 24 << 20
		peak, elapsed := sampleHeap(t, volume)
		t.Logf("64 MiB through bash (race): peak heap %.1f MiB, %v", float64(peak)/(1<<20), elapsed)
		if peak >= limit {
			t.Errorf("peak heap %d bytes, want < %d", peak, limit)
		}
		return
	}
	hwm, elapsed := measureBash1GiB(t)
	t.Logf("1 GiB through bash: peak RSS %.1f MiB, %v", float64(hwm)/(1<<20), elapsed)
	if hwm >= bashMemLimit {
		t.Errorf("peak RSS %d bytes, want < %d", hwm, bashMemLimit)
	}
}

// sampleHeap runs the workload in this process while sampling the heap
// (runtime/metrics, no stop-the-world) and returns the peak.
func sampleHeap(t *testing.T, volume int) (uint64, time.Duration) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
	var peak uint64
	read := func() {
		metrics.Read(sample)
		if v := sample[0].Value.Uint64() + sample[1].Value.Uint64(); v > peak {
			peak = v
		}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				read()
			}
		}
	}()
	start := time.Now()
	_, spilled, err := runBashVolume(volume)
	elapsed := time.Since(start)
	close(stop)
	<-done
	read()
	if err != nil || spilled != int64(volume) {
		t.Fatalf("err %v, spilled %d", err, spilled)
	}
	return peak, elapsed
}

// BenchmarkBash1GiB reports the throughput of the output path and the peak
// RSS of a 1 GiB command output (measured in a child process).
func BenchmarkBash1GiB(b *testing.B) {
	for b.Loop() {
		hwm, elapsed := measureBash1GiB(b)
		b.ReportMetric(float64(hwm)/(1<<20), "peakRSS-MiB")
		b.ReportMetric(float64(bashMemTotal)/(1<<20)/elapsed.Seconds(), "MiB/s")
	}
}

func (bashCountingFS) ReadDir(context.Context, string) ([]fs.DirEntry, error) {
	return nil, fs.ErrNotExist
}
