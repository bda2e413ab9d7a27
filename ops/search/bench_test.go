package search

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// Benchmarks over GOROOT/src (about 10k files), engine and real tools.

func benchGrep(b *testing.B, g grepFunc, pattern string) {
	root := benchRoot()
	cpu0 := cpuTime()
	for b.Loop() {
		n := 0
		err := g(context.Background(), &ops.GrepQuery{Pattern: pattern, Path: root}, func(ops.GrepEvent) error { n++; return nil })
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(n), "events")
	}
	// CPU time (this process and the rg it ran) tells more than wall time
	// on a loaded machine.
	b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
}

func BenchmarkGrepEngine(b *testing.B)      { benchGrep(b, engineGrep, `func \w+Unicode`) }
func BenchmarkGrepEngineWordB(b *testing.B) { benchGrep(b, engineGrep, `\bUnicode\b`) }
func BenchmarkGrepRG(b *testing.B)          { needToolB(b, "rg"); benchGrep(b, rgGrep, `func \w+Unicode`) }

// benchPatterns are the patterns the engine should find as fast as rg:
// case-insensitive, non-ASCII, a literal, and one that matches nothing.
var benchPatterns = []string{`(?i)func newreader`, `(?i)über`, `ÜBER|straße`, `(?i)xyzzy_nomatch`, `func NewReader`}

// BenchmarkGrepPatterns runs each of benchPatterns with the engine and with
// rg (pi's argv): go test -run '^$' -bench GrepPatterns -benchtime 3x.
func BenchmarkGrepPatterns(b *testing.B) {
	for _, p := range benchPatterns {
		b.Run("engine/"+p, func(b *testing.B) { benchGrep(b, engineGrep, p) })
		b.Run("rg/"+p, func(b *testing.B) { needToolB(b, "rg"); benchGrep(b, rgGrep, p) })
	}
}

// benchRoot is $SEARCH_BENCH_ROOT, else GOROOT/src.
func benchRoot() string {
	if r := os.Getenv("SEARCH_BENCH_ROOT"); r != "" {
		return r
	}
	return filepath.Join(runtime.GOROOT(), "src")
}

func benchFind(b *testing.B, f findFunc, pattern string) {
	root := benchRoot()
	for b.Loop() {
		n := 0
		if err := f(context.Background(), &ops.FindQuery{Pattern: pattern, Path: root}, func(string) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(n), "results")
	}
}

func BenchmarkFindEngine(b *testing.B) { benchFind(b, engineFind, "*_test.go") }
func BenchmarkFindFD(b *testing.B)     { needToolB(b, "fdfind"); benchFind(b, fdFind, "*_test.go") }

func needToolB(b *testing.B, name string) {
	b.Helper()
	if _, err := exec.LookPath(name); err != nil {
		b.Skip(name + " not installed")
	}
}
