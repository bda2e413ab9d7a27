package opstest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// moreCases are robustness cases aimed at transports: paging, early close,
// concurrency on one file, argument size.
func moreCases() []testCase {
	return []testCase{
		{name: "ReadDir/ManyEntries", fn: testReadDirMany},
		{name: "Open/CloseEarly", fn: testOpenCloseEarly},
		{name: "WriteFile/ConcurrentSameFile", fn: testConcurrentWrites},
		{name: "Run/LongCommand", fn: testLongCommand},
		{name: "Run/EnvWithNewlineAndUnicode", fn: testEnvSpecial},
		{name: "Run/ZeroTimeoutIsNone", fn: testZeroTimeout},
		{name: "Run/CancelWhileFlooding", fn: testFlood(false)},
		{name: "Run/TimeoutWhileFlooding", fn: testFlood(true)},
		{name: "Files/OddNames", fn: testOddNames},
		{name: "Stat/SparseOver4GiB", fn: testSparse},
		{name: "Run/CancelKillsDeepTree", fn: testCancelKillsTree(
			`sh -c 'sh -c "sleep 300 & echo \$! >> pids; wait" & sleep 300 & echo $! >> pids; wait' &
until [ -f pids ] && [ $(wc -l < pids) -ge 2 ]; do sleep 0.01; done; echo ready; wait`, false, 2)},
	}
}

func testReadDirMany(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	sh(t, ctx, b, dir, `mkdir d && cd d && i=0; while [ $i -lt 1500 ]; do : > "f$i"; i=$((i+1)); done`)
	es, err := b.ReadDir(ctx, dir+"/d")
	if err != nil {
		t.Fatal(err)
	}
	got := names(es)
	if len(got) != 1500 || !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != 1500 {
		t.Fatalf("ReadDir: %d entries (sorted %v), want 1500 distinct sorted", len(got), slices.IsSorted(got))
	}
}

func testOpenCloseEarly(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	if err := b.WriteFile(ctx, dir+"/big", randomBytes(16<<20, 3), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := b.Open(ctx, dir+"/big")
	if err != nil {
		t.Fatal(err)
	}
	head := make([]byte, 1024)
	if _, err := io.ReadFull(r, head); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := r.Close(); err != nil {
		t.Errorf("Close after a partial read: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close after a partial read took %s: it should stop the transfer", d)
	}
	// The backend is still usable.
	writeFile(t, ctx, b, dir+"/after", "ok")
	if got := readAll(t, ctx, b, dir+"/after"); string(got) != "ok" {
		t.Fatalf("read after early close: %q", got)
	}
}

func testConcurrentWrites(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	name := dir + "/shared"
	contents := make([][]byte, 8)
	errs := make([]error, 8)
	var wg sync.WaitGroup
	for i := range contents {
		contents[i] = bytes.Repeat([]byte{byte('a' + i)}, 1<<20)
		wg.Go(func() { errs[i] = b.WriteFile(ctx, name, contents[i], 0o644) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	got := readAll(t, ctx, b, name)
	if !slices.ContainsFunc(contents, func(c []byte) bool { return bytes.Equal(c, got) }) {
		t.Fatalf("final content is none of the writes: %s", describeMix(got))
	}
	es, err := b.ReadDir(ctx, dir)
	if err != nil || len(es) != 1 {
		t.Fatalf("directory holds %v, %v; want only the file (no temp files)", names(es), err)
	}
}

func testLongCommand(t testing.TB, ctx context.Context, b ops.Backend) {
	// 100 KiB: below Linux's 128 KiB limit for one argument, which pi's
	// own spawn shares.
	word := strings.Repeat("x", 100<<10)
	out, err := run(ctx, b, "", "printf %s "+word+" | wc -c")
	if err != nil || strings.TrimSpace(out) != fmt.Sprint(len(word)) {
		t.Fatalf("Run with a 100 KiB command = %q, %v", out, err)
	}
}

func testEnvSpecial(t testing.TB, ctx context.Context, b ops.Backend) {
	var out bytes.Buffer
	val := "line one\nline two — ünïcödé 😀\t'\"$HOME`x`"
	err := b.Run(ctx, &ops.Cmd{Command: `printf '%s' "$OPSTEST_V"; printf '|%s' 'ké €'`, Env: []string{"OPSTEST_V=" + val}, Output: &out})
	if want := val + "|ké €"; err != nil || out.String() != want {
		t.Fatalf("output %q, %v; want %q", out.String(), err, want)
	}
}

func testZeroTimeout(t testing.TB, ctx context.Context, b ops.Backend) {
	if err := b.Run(ctx, &ops.Cmd{Command: "sleep 0.3", Timeout: 0}); err != nil {
		t.Fatalf("Run with Timeout 0 = %v, want no timeout", err)
	}
}

// testOddNames: names that a shell-based transport must quote.
func testOddNames(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	odd := []string{"a b", "it's", `q"uote`, "ünïcödé 日本", "tab\there", "-dash", "*star", "$var", "back\\slash", "new\nline"}
	for _, n := range odd {
		writeFile(t, ctx, b, dir+"/"+n, n)
	}
	es, err := b.ReadDir(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(odd))
	if got := names(es); !slices.Equal(got, want) {
		t.Fatalf("ReadDir = %q, want %q", got, want)
	}
	for _, n := range odd {
		if got := readAll(t, ctx, b, dir+"/"+n); string(got) != n {
			t.Errorf("content of %q = %q", n, got)
		}
		if fi, err := b.Stat(ctx, dir+"/"+n); err != nil || fi.Name() != n || fi.Size() != int64(len(n)) {
			t.Errorf("Stat(%q) = %v, %v", n, fi, err)
		}
		if p, err := b.RealPath(ctx, dir+"/"+n); err != nil || !strings.HasSuffix(p, "/"+n) {
			t.Errorf("RealPath(%q) = %q, %v", n, p, err)
		}
	}
	if out := sh(t, ctx, b, dir, "cat -- '-dash' 'a b'"); out != "-dasha b" {
		t.Errorf("the shell reads %q", out)
	}
}

// testSparse: sizes above 4 GiB survive the transport (no 32-bit parsing).
func testSparse(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	sh(t, ctx, b, dir, "dd if=/dev/null of=big bs=1048576 seek=5120 2>/dev/null")
	const size = 5 << 30
	fi, err := b.Stat(ctx, dir+"/big")
	if err != nil || fi.Size() != size {
		t.Fatalf("Stat = %v, %v; want size %d", fi, err, int64(size))
	}
	es, err := b.ReadDir(ctx, dir)
	if err != nil || len(es) != 1 {
		t.Fatalf("ReadDir = %v, %v", names(es), err)
	}
	if fi, err := es[0].Info(); err != nil || fi.Size() != size {
		t.Fatalf("entry Info = %v, %v; want size %d", fi, err, int64(size))
	}
}

// testFlood stops a command that writes as fast as it can: Run must return
// promptly, not drain forever.
func testFlood(timeout bool) caseFunc {
	return func(t testing.TB, ctx context.Context, b ops.Backend) {
		cctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		sink := &floodSink{ready: make(chan struct{})}
		c := &ops.Cmd{Command: "yes", Output: sink}
		if timeout {
			c.Timeout = time.Second
		}
		errc := make(chan error, 1)
		go func() { errc <- b.Run(cctx, c) }()
		if !timeout {
			select {
			case <-sink.ready:
			case <-ctx.Done():
				t.Fatal("no output")
			}
		}
		cause := fmt.Errorf("opstest: flood stopped")
		start := time.Now()
		if !timeout {
			cancel(cause)
		}
		err := waitErr(t, ctx, errc)
		limit := 10 * time.Second
		if timeout {
			limit += time.Second
		}
		if d := time.Since(start); d > limit {
			t.Errorf("Run returned %s after the stop", d)
		}
		var te *ops.TimeoutError
		switch {
		case timeout && !errors.As(err, &te):
			t.Fatalf("Run = %v, want *ops.TimeoutError", err)
		case !timeout && !errors.Is(err, cause):
			t.Fatalf("Run = %v, want the cause", err)
		}
	}
}

// floodSink counts bytes and closes ready at the first byte.
type floodSink struct {
	n     int64
	ready chan struct{}
}

func (s *floodSink) Write(p []byte) (int, error) {
	if s.n == 0 && len(p) > 0 {
		close(s.ready)
	}
	s.n += int64(len(p))
	return len(p), nil
}
