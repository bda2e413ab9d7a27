package search

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// The test binary is the shim (see TestMain): the client side runs it through
// a shell exactly as it would run the real shim in a target.

func shimGrep(ctx context.Context, q *ops.GrepQuery, fn func(ops.GrepEvent) error) error {
	return GrepViaShim(ctx, shRunner{}, os.Args[0], q, fn)
}

func shimFind(ctx context.Context, q *ops.FindQuery, fn func(string) error) error {
	return FindViaShim(ctx, shRunner{}, os.Args[0], q, fn)
}

func TestShimGrepMatchesEngine(t *testing.T) {
	root := repoTree(t)
	for _, c := range grepCases(root)[:6] {
		got, err := collectGrep(t, shimGrep, c.q)
		if err != nil || !equal(got, c.want) {
			t.Errorf("%s: %q, %v; want %q", c.name, got, err, c.want)
		}
	}
	q := ops.GrepQuery{Pattern: "match", Path: filepath.Join(root, "ctx.txt"), Context: 2, MaxMatches: 1}
	got, err := collectGrep(t, shimGrep, q)
	want := []string{"ctx.txt-1- line", "ctx.txt-2- line", "ctx.txt:3: line match", "ctx.txt-4- line"}
	if err != nil || !equal(got, want) {
		t.Errorf("limit: %q, %v; want %q", got, err, want)
	}
}

func TestShimGrepErrors(t *testing.T) {
	_, err := collectGrep(t, shimGrep, ops.GrepQuery{Pattern: "(x", Path: "/"})
	var pe *PatternError
	if !errors.As(err, &pe) || !errors.Is(err, ops.ErrBadPattern) || err.Error() != "regex parse error: missing closing ): `(x`" {
		t.Errorf("bad pattern: %v", err)
	}
	_, err = collectGrep(t, shimGrep, ops.GrepQuery{Pattern: "x", Path: "/nonexistent/x"})
	if ops.ErrnoOf(err) != ops.ENOENT {
		t.Errorf("missing: %v", err)
	}
}

func TestShimGrepStopsOnCallbackError(t *testing.T) {
	root := repoTree(t)
	boom := errors.New("boom")
	n := 0
	err := GrepViaShim(context.Background(), shRunner{}, os.Args[0], &ops.GrepQuery{Pattern: "hello", Path: root}, func(ops.GrepEvent) error {
		n++
		return boom
	})
	if !errors.Is(err, boom) || n != 1 {
		t.Fatalf("err = %v after %d events", err, n)
	}
}

func TestShimFind(t *testing.T) {
	root := findTree(t)
	for _, c := range findCases {
		got, err := collectFind(t, shimFind, ops.FindQuery{Pattern: c.pattern, Path: root})
		if err != nil || !equal(got, c.want) {
			t.Errorf("%s: %q, %v; want %q", c.name, got, err, c.want)
		}
	}
	_, err := collectFind(t, shimFind, ops.FindQuery{Pattern: "[a", Path: root})
	if !errors.Is(err, ops.ErrBadPattern) {
		t.Errorf("bad glob: %v", err)
	}
}

// unsupportedFS claims the capabilities but declines them, so the helpers
// must fall back to the engine.
type unsupportedFS struct{ osFS }

func (unsupportedFS) Grep(context.Context, *ops.GrepQuery, func(ops.GrepEvent) error) error {
	return ops.ErrUnsupported
}

func (unsupportedFS) Find(context.Context, *ops.FindQuery, func(string) error) error {
	return ops.ErrUnsupported
}

// fixedFS answers every query with one canned result.
type fixedFS struct{ osFS }

func (fixedFS) Grep(_ context.Context, _ *ops.GrepQuery, fn func(ops.GrepEvent) error) error {
	return fn(ops.GrepEvent{Path: "canned", Line: 7, Match: true, Text: []byte("x")})
}

func (fixedFS) Find(_ context.Context, _ *ops.FindQuery, fn func(string) error) error {
	return fn("canned")
}

func TestHelpersUseCapability(t *testing.T) {
	root := repoTree(t)
	q := ops.GrepQuery{Pattern: "hello", Path: filepath.Join(root, "a.txt")}
	h := func(fsys ops.FS) grepFunc {
		return func(ctx context.Context, q *ops.GrepQuery, fn func(ops.GrepEvent) error) error {
			return Grep(ctx, fsys, q, fn)
		}
	}
	if got, err := collectGrep(t, h(unsupportedFS{}), q); err != nil || !equal(got, []string{"a.txt:1: hello world"}) {
		t.Errorf("fallback: %q, %v", got, err)
	}
	if got, err := collectGrep(t, h(fixedFS{}), q); err != nil || !equal(got, []string{"canned:7: x"}) {
		t.Errorf("capability: %q, %v", got, err)
	}
	fq := ops.FindQuery{Pattern: "*.ts", Path: findTree(t), MaxResults: 1}
	f := func(fsys ops.FS) findFunc {
		return func(ctx context.Context, q *ops.FindQuery, fn func(string) error) error {
			return Find(ctx, fsys, q, fn)
		}
	}
	if got, err := collectFind(t, f(unsupportedFS{}), fq); err != nil || !equal(got, []string{".hidden/h.ts"}) {
		t.Errorf("find fallback: %q, %v", got, err)
	}
	if got, err := collectFind(t, f(fixedFS{}), fq); err != nil || !equal(got, []string{"canned"}) {
		t.Errorf("find capability: %q, %v", got, err)
	}
}

func TestRemoteFallsBackFromMissingShim(t *testing.T) {
	needTool(t, "rg")
	root := repoTree(t)
	r := Remote{Runner: shRunner{}, ShimPath: "/nonexistent/shim"}
	q := ops.GrepQuery{Pattern: "hello", Path: filepath.Join(root, "a.txt")}
	got, err := collectGrep(t, r.Grep, q)
	if err != nil || !equal(got, []string{"a.txt:1: hello world"}) {
		t.Fatalf("grep: %q, %v", got, err)
	}
	r.ShimPath = os.Args[0]
	got, err = collectGrep(t, r.Grep, q)
	if err != nil || !equal(got, []string{"a.txt:1: hello world"}) {
		t.Fatalf("grep via shim: %q, %v", got, err)
	}
	needTool(t, "fdfind", "fd")
	r.ShimPath = "/nonexistent/shim"
	fq := ops.FindQuery{Pattern: "c.ts", Path: root}
	found, err := collectFind(t, r.Find, fq)
	if err != nil || !equal(found, []string{"sub/src/c.ts"}) {
		t.Fatalf("find: %q, %v", found, err)
	}
}

func TestRunnersReportMissingTools(t *testing.T) {
	// A runner whose shell finds nothing: rg and fd are "not installed".
	r := emptyPathRunner{}
	err := GrepWithRG(context.Background(), r, &ops.GrepQuery{Pattern: "x", Path: "/"}, func(ops.GrepEvent) error { return nil })
	if !errors.Is(err, ops.ErrUnsupported) {
		t.Errorf("rg: %v", err)
	}
	err = FindWithFD(context.Background(), r, &ops.FindQuery{Pattern: "x", Path: "/"}, func(string) error { return nil })
	if !errors.Is(err, ops.ErrUnsupported) {
		t.Errorf("fd: %v", err)
	}
}

type emptyPathRunner struct{}

func (emptyPathRunner) Run(ctx context.Context, c *ops.Cmd) error {
	c2 := *c
	c2.Command = "PATH=/nonexistent; " + c.Command
	return shRunner{}.Run(ctx, &c2)
}

func TestShimNonUTF8Paths(t *testing.T) {
	root := t.TempDir()
	name := "bad\xff\xfe.txt"
	if err := os.WriteFile(filepath.Join(root, name), []byte("needle\n"), 0o644); err != nil {
		t.Skipf("file system refuses non-UTF-8 names: %v", err)
	}
	got, err := collectGrep(t, shimGrep, ops.GrepQuery{Pattern: "needle", Path: root})
	if err != nil || !equal(got, []string{name + ":1: needle"}) {
		t.Errorf("grep: %q, %v", got, err)
	}
	found, err := collectFind(t, shimFind, ops.FindQuery{Pattern: "bad*", Path: root})
	if err != nil || !equal(found, []string{name}) {
		t.Errorf("find: %q, %v", found, err)
	}
}
