//go:build linux

package beneath_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops/internal/beneath"
)

// TestAgainstKernel compares the walk with the kernel's own resolution on a
// tree of random links (relative ones with "..", absolute ones, chains,
// loops, links between the root and the outside), for random clean paths:
// unconfined, Stat and RealPath must give what os.Stat and EvalSymlinks
// give; confined to B/w, a path whose kernel resolution lies inside must
// give the same file, and one that lies outside must be refused.
func TestAgainstKernel(t *testing.T) {
	b, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w, o := b+"/w", b+"/o"
	for _, d := range []string{w + "/a/x", w + "/b", w + "/c", o + "/p", o + "/q"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{w + "/f", w + "/a/f", w + "/a/x/f", w + "/b/f", o + "/f", o + "/p/f", b + "/f"} {
		if err := os.WriteFile(f, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	targets := []string{"..", "../..", "../../..", "a", "a/x", "x/..", "f", "../f", "../o", "../../o/p",
		"l1", "l2/f", "l3/..", "missing", "missing/..", "f/..", w, w + "/a", w + "/b/..", o, o + "/p/..", b, "/", "b/l4", "../w/a/l5"}
	dirs := []string{w, w + "/a", w + "/a/x", w + "/b", o, o + "/p", b}
	for i := 1; i <= 8; i++ {
		for _, d := range dirs {
			if rng.IntN(3) == 0 {
				os.Symlink(targets[rng.IntN(len(targets))], d+"/l"+string(rune('0'+i)))
			}
		}
	}
	names := []string{"a", "b", "c", "x", "f", "p", "q", "w", "o", "l1", "l2", "l3", "l4", "l5", "l6", "l7", "l8", "missing"}

	free, err := beneath.Open([]beneath.Root{{Path: "/"}})
	if err != nil {
		t.Fatal(err)
	}
	defer free.Close()
	conf, err := beneath.Open([]beneath.Root{{Path: w}})
	if err != nil {
		t.Fatal(err)
	}
	defer conf.Close()

	agreed, inside, refused := 0, 0, 0
	for range 6000 {
		p := []string{w, o, b}[rng.IntN(3)]
		for n := 1 + rng.IntN(4); n > 0; n-- {
			p += "/" + names[rng.IntN(len(names))]
		}
		kfi, kerr := os.Stat(p)
		fi, err := free.Stat(p)
		if outcome(err) != outcome(kerr) || err == nil && ino(t, p) != fi.Sys().(*syscall.Stat_t).Ino {
			t.Errorf("unconfined stat %s: %v, the kernel says %v", p, err, kerr)
			continue
		}
		agreed++
		if kerr == nil {
			krp, _ := filepath.EvalSymlinks(p)
			if rp, err := free.RealPath(p); err != nil || rp != krp {
				t.Errorf("unconfined realpath %s: %q, %v; the kernel says %q", p, rp, err, krp)
			}
			cfi, cerr := conf.Stat(p)
			switch {
			case krp == w || strings.HasPrefix(krp, w+"/"):
				inside++
				if cerr != nil || cfi.Sys().(*syscall.Stat_t).Ino != kfi.Sys().(*syscall.Stat_t).Ino {
					t.Errorf("confined stat %s (inside, at %s): %v", p, krp, cerr)
				}
			default:
				refused++
				if outcome(cerr) != "outside" {
					t.Errorf("confined stat %s (outside, at %s): %v, want refused", p, krp, cerr)
				}
			}
		} else if _, cerr := conf.Stat(p); cerr == nil {
			t.Errorf("confined stat %s: succeeded, the kernel says %v", p, kerr)
		} else if c := outcome(cerr); c != outcome(kerr) && c != "outside" {
			t.Errorf("confined stat %s: %v, the kernel says %v", p, cerr, kerr)
		}
	}
	t.Logf("%d paths agreed with the kernel; %d existing inside, %d existing outside", agreed, inside, refused)
	if inside < 100 || refused < 100 {
		t.Errorf("too few paths exercised: %d inside, %d outside", inside, refused)
	}
}
