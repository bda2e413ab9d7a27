package search

import (
	"context"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// Benchmarks over GOROOT/src (about 10k files), engine and real tools.

func benchGrep(b *testing.B, g grepFunc, pattern string) {
	root := filepath.Join(runtime.GOROOT(), "src")
	for b.Loop() {
		n := 0
		err := g(context.Background(), &ops.GrepQuery{Pattern: pattern, Path: root}, func(ops.GrepEvent) error { n++; return nil })
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(n), "events")
	}
}

func BenchmarkGrepEngine(b *testing.B)      { benchGrep(b, engineGrep, `func \w+Unicode`) }
func BenchmarkGrepEngineWordB(b *testing.B) { benchGrep(b, engineGrep, `\bUnicode\b`) }
func BenchmarkGrepRG(b *testing.B)          { needToolB(b, "rg"); benchGrep(b, rgGrep, `func \w+Unicode`) }

func benchFind(b *testing.B, f findFunc, pattern string) {
	root := filepath.Join(runtime.GOROOT(), "src")
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
