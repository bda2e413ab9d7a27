package opstest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/search"
)

func searchCases() []testCase {
	return []testCase{
		{name: "Grep/MatchesFallback", fn: testGrepCapability},
		{name: "Find/MatchesFallback", fn: testFindCapability},
	}
}

// searchTree builds a small tree with ignored, hidden and nested files.
func searchTree(t testing.TB, ctx context.Context, b ops.Backend) string {
	dir := scratch(t, ctx, b)
	sh(t, ctx, b, dir, `mkdir -p src/deep .hidden build &&
printf 'build/\n*.log\n' > .gitignore &&
printf 'alpha\nneedle one\nbeta\n' > src/a.go &&
printf 'Needle two\n\tneedle three — ünïcode\n' > src/deep/b.txt &&
printf 'needle hidden\n' > .hidden/h.txt &&
printf 'needle ignored\n' > build/out.txt &&
printf 'needle log\n' > x.log &&
printf 'no match\n' > README`)
	return dir
}

func testGrepCapability(t testing.TB, ctx context.Context, b ops.Backend) {
	if _, ok := b.(ops.GrepFS); !ok {
		t.Skip("backend does not implement ops.GrepFS")
	}
	dir := searchTree(t, ctx, b)
	for _, q := range []ops.GrepQuery{
		{Pattern: "needle", Path: dir},
		{Pattern: "needle", Path: dir, IgnoreCase: true, Context: 1},
		{Pattern: `n\w+e`, Path: dir, Glob: "*.txt"},
		{Pattern: "needle", Path: dir + "/src/a.go"},
	} {
		got, gerr := collectGrep(ctx, b, &q)
		want, werr := collectGrep(ctx, struct{ ops.FS }{b}, &q)
		// Order across files may differ (rg and fd are multi-threaded).
		slices.Sort(got)
		slices.Sort(want)
		if (gerr == nil) != (werr == nil) || !slices.Equal(got, want) {
			t.Errorf("grep %+v:\ncapability %q, %v\nfallback   %q, %v", q, got, gerr, want, werr)
		}
		if len(want) == 0 {
			t.Errorf("grep %+v: no results from the fallback; the case proves nothing", q)
		}
	}
	if got, err := collectGrep(ctx, b, &ops.GrepQuery{Pattern: "needle", Path: dir, MaxMatches: 2}); err != nil || len(got) != 2 {
		t.Errorf("grep with MaxMatches 2 = %q, %v", got, err)
	}
	_, err := collectGrep(ctx, b, &ops.GrepQuery{Pattern: "(", Path: dir})
	if !errors.Is(err, ops.ErrBadPattern) {
		t.Errorf("grep with an invalid pattern = %v, want ops.ErrBadPattern", err)
	}
}

func collectGrep(ctx context.Context, fsys ops.FS, q *ops.GrepQuery) ([]string, error) {
	var out []string
	err := search.Grep(ctx, fsys, q, func(ev ops.GrepEvent) error {
		out = append(out, fmt.Sprintf("%s:%d:%v:%s", ev.Path, ev.Line, ev.Match, ev.Text))
		return nil
	})
	return out, err
}

func testFindCapability(t testing.TB, ctx context.Context, b ops.Backend) {
	if _, ok := b.(ops.FindFS); !ok {
		t.Skip("backend does not implement ops.FindFS")
	}
	dir := searchTree(t, ctx, b)
	for _, q := range []ops.FindQuery{
		{Pattern: "*", Path: dir},
		{Pattern: "*.txt", Path: dir},
		{Pattern: "src/**", Path: dir},
		{Pattern: "*.TXT", Path: dir},
	} {
		got, gerr := collectFind(ctx, b, &q)
		want, werr := collectFind(ctx, struct{ ops.FS }{b}, &q)
		slices.Sort(got)
		slices.Sort(want)
		if (gerr == nil) != (werr == nil) || !slices.Equal(got, want) {
			t.Errorf("find %+v:\ncapability %q, %v\nfallback   %q, %v", q, got, gerr, want, werr)
		}
	}
	if got, err := collectFind(ctx, b, &ops.FindQuery{Pattern: "*", Path: dir, MaxResults: 3}); err != nil || len(got) != 3 {
		t.Errorf("find with MaxResults 3 = %q, %v", got, err)
	}
}

func collectFind(ctx context.Context, fsys ops.FS, q *ops.FindQuery) ([]string, error) {
	var out []string
	err := search.Find(ctx, fsys, q, func(rel string) error {
		out = append(out, rel)
		return nil
	})
	return out, err
}
