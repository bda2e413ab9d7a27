package opstest

import (
	"bytes"
	"context"
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
