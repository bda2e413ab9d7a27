package opstest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

func replaceCases() []testCase {
	return []testCase{
		{name: "Replace/Conflict", fn: testReplaceConflict},
		{name: "Replace/NoLostUpdate", fn: testReplaceNoLostUpdate},
		{name: "WriteParents/Steps", fn: testWriteParents},
	}
}

// replacer returns b's ReplaceFS, or skips.
func replacer(t testing.TB, ctx context.Context, b ops.Backend, name string) ops.ReplaceFS {
	r, ok := b.(ops.ReplaceFS)
	if !ok {
		t.Skip("backend does not implement ops.ReplaceFS")
	}
	if err := r.ReplaceFile(ctx, name, []byte("probe\n"), []byte("probe\n")); errors.Is(err, ops.ErrUnsupported) {
		t.Skip("backend does not implement ops.ReplaceFS (ErrUnsupported)")
	}
	return r
}

// testReplaceConflict: a replacement of content that is no longer there
// fails with ErrConflict and changes nothing; one of the current content
// lands.
func testReplaceConflict(t testing.TB, ctx context.Context, b ops.Backend) {
	name := scratch(t, ctx, b) + "/f"
	writeFile(t, ctx, b, name, "probe\n")
	r := replacer(t, ctx, b, name)
	writeFile(t, ctx, b, name, "current\n")
	err := r.ReplaceFile(ctx, name, []byte("stale\n"), []byte("lost\n"))
	if !errors.Is(err, ops.ErrConflict) {
		t.Fatalf("ReplaceFile of stale content = %v, want ErrConflict", err)
	}
	if got := string(readAll(t, ctx, b, name)); got != "current\n" {
		t.Fatalf("after the conflict the file holds %q", got)
	}
	if err := r.ReplaceFile(ctx, name, []byte("current\n"), []byte("next\n")); err != nil {
		t.Fatalf("ReplaceFile of the current content: %v", err)
	}
	if got := string(readAll(t, ctx, b, name)); got != "next\n" {
		t.Fatalf("after the replacement the file holds %q", got)
	}
}

// testReplaceNoLostUpdate: two writers change different
// lines of one file at once, each a read then a ReplaceFile, again on a
// conflict: every change is kept.
func testReplaceNoLostUpdate(t testing.TB, ctx context.Context, b ops.Backend) {
	name := scratch(t, ctx, b) + "/shared"
	writeFile(t, ctx, b, name, "probe\n")
	r := replacer(t, ctx, b, name)
	const lines = 24
	var init strings.Builder
	for i := range lines {
		fmt.Fprintf(&init, "line %d old\n", i)
	}
	writeFile(t, ctx, b, name, init.String())
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for k := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := k; i < lines; i += 2 {
				oldLine, newLine := fmt.Sprintf("line %d old\n", i), fmt.Sprintf("line %d new\n", i)
				for attempt := 0; ; attempt++ {
					cur, err := ops.ReadFile(ctx, b, name)
					if err != nil {
						errs <- err
						return
					}
					err = r.ReplaceFile(ctx, name, cur, []byte(strings.Replace(string(cur), oldLine, newLine, 1)))
					if err == nil {
						break
					}
					if !errors.Is(err, ops.ErrConflict) || attempt > 100 {
						errs <- fmt.Errorf("line %d, attempt %d: %w", i, attempt, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := string(readAll(t, ctx, b, name))
	if n := strings.Count(got, " new\n"); n != lines {
		t.Fatalf("%d of %d concurrent changes kept:\n%s", n, lines, got)
	}
}

// testWriteParents: ops.WriteParentsFS makes the parents and writes; it
// refuses a FIFO (and leaves it), and an existing file keeps its mode.
func testWriteParents(t testing.TB, ctx context.Context, b ops.Backend) {
	wp, ok := b.(ops.WriteParentsFS)
	if !ok {
		t.Skip("backend does not implement ops.WriteParentsFS")
	}
	dir := scratch(t, ctx, b)
	name := dir + "/a/b/c.txt"
	if err := wp.WriteFileParents(ctx, name, []byte("new\n"), 0o644); errors.Is(err, ops.ErrUnsupported) {
		t.Skip("backend does not implement ops.WriteParentsFS (ErrUnsupported)")
	} else if err != nil {
		t.Fatalf("WriteFileParents of a new nested file: %v", err)
	}
	if got := string(readAll(t, ctx, b, name)); got != "new\n" {
		t.Fatalf("after WriteFileParents: %q", got)
	}
	if fi, err := b.Stat(ctx, dir+"/a/b"); err != nil || !fi.IsDir() {
		t.Fatalf("the parent: %v, %v", fi, err)
	}
	sh(t, ctx, b, dir, "chmod 600 a/b/c.txt && mkfifo fifo")
	if err := wp.WriteFileParents(ctx, name, []byte("again\n"), 0o644); err != nil {
		t.Fatalf("WriteFileParents over an existing file: %v", err)
	}
	if fi, err := b.Stat(ctx, name); err != nil || fi.Mode().Perm() != 0o600 || string(readAll(t, ctx, b, name)) != "again\n" {
		t.Fatalf("after the overwrite: %v, %v (want mode 0600 kept)", fi, err)
	}
	if err := wp.WriteFileParents(ctx, dir+"/fifo", []byte("x"), 0o644); err == nil {
		t.Fatalf("WriteFileParents replaced a FIFO")
	}
	if fi, err := b.Lstat(ctx, dir+"/fifo"); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO after the refused write: %v, %v", fi, err)
	}
}
