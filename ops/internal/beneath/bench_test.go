//go:build linux

package beneath_test

import (
	"os"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops/internal/beneath"
)

// BenchmarkStat compares a confined Stat of a file three levels below the
// root with os.Stat (the cost of walking element by element).
func BenchmarkStat(b *testing.B) {
	dir := b.TempDir()
	p := dir + "/a/b/c/f.txt"
	if err := os.MkdirAll(dir+"/a/b/c", 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		b.Fatal(err)
	}
	s, err := beneath.Open([]beneath.Root{{Path: dir}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	p = s.Roots()[0].Path + "/a/b/c/f.txt"
	b.Run("beneath", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Stat(p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("beneath-no-openat2", func(b *testing.B) {
		withoutOpenat2(b, true)
		for b.Loop() {
			if _, err := s.Stat(p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("os", func(b *testing.B) {
		for b.Loop() {
			if _, err := os.Stat(p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("beneath-write", func(b *testing.B) {
		for b.Loop() {
			if err := s.WriteFileAtomic(p, nil, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	})
}
