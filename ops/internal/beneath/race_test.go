//go:build linux

package beneath_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pi-sandbox/pi-sandbox/ops/internal/beneath"
)

// raceFS is what the swap-race harness drives: the package, or a
// check-then-use implementation that must be caught (selftest).
type raceFS interface {
	ReadFile(name string) ([]byte, error)
	Stat(name string) (fs.FileInfo, error)
	ReadDir(name string) ([]fs.DirEntry, error)
	WriteFile(name string, data []byte) error
	MkdirAll(name string) error
	Create(name string) error
}

type setRaceFS struct{ s *beneath.Set }

func (f setRaceFS) ReadFile(name string) ([]byte, error) {
	fl, err := f.s.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer fl.Close()
	return io.ReadAll(fl)
}
func (f setRaceFS) Stat(name string) (fs.FileInfo, error)      { return f.s.Stat(name) }
func (f setRaceFS) ReadDir(name string) ([]fs.DirEntry, error) { return f.s.ReadDir(name) }
func (f setRaceFS) WriteFile(name string, data []byte) error {
	return f.s.WriteFileAtomic(name, strings.NewReader(string(data)), 0o644)
}
func (f setRaceFS) MkdirAll(name string) error { return f.s.MkdirAll(name, 0o755) }
func (f setRaceFS) Create(name string) error {
	fl, err := f.s.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	return fl.Close()
}

// raceTree: B/w is the root; B/w/d is a directory that a swapper keeps
// exchanging (renameat2 RENAME_EXCHANGE, atomic) with B/w/d.alt, a link
// to B/o, outside. Both hold f.txt and sub/; B/o also holds
// outside-only.txt.
type raceTree struct{ W, O string }

func newRaceTree(t *testing.T) raceTree {
	t.Helper()
	b, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tr := raceTree{W: b + "/w", O: b + "/o"}
	for _, d := range []string{tr.W + "/d/sub", tr.O + "/sub"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, c := range map[string]string{
		tr.W + "/d/f.txt":          "inside\n",
		tr.O + "/f.txt":            secret + "\n",
		tr.O + "/outside-only.txt": secret + "\n",
	} {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(tr.O, tr.W+"/d.alt"); err != nil {
		t.Fatal(err)
	}
	return tr
}

// listing is every name under B/o with its content.
func (tr raceTree) listing(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(tr.O, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(p)
		if d.Type().IsRegular() {
			c, _ := os.ReadFile(p)
			b.WriteString(" " + string(c))
		}
		b.WriteString("\n")
		return nil
	})
	return b.String()
}

// raceKinds names the calls by i%6.
var raceKinds = [6]string{"ReadFile", "Stat", "ReadDir", "WriteFile", "MkdirAll", "Create"}

type raceResult struct {
	escapes  []string
	ok       atomic.Int64 // calls that succeeded
	okBy     [6]atomic.Int64
	refused  atomic.Int64 // calls refused by confinement
	attempts atomic.Int64
}

// swapRace runs workers through B/w/d while it is swapped with a link to
// the outside, for at most iterations calls or budget, and returns what
// escaped: the outside file read or stated, the outside directory listed,
// or anything written, made or created in it. With stopEarly it ends at
// the first escape.
func swapRace(t *testing.T, tr raceTree, f raceFS, iterations int, budget time.Duration, stopEarly bool) *raceResult {
	t.Helper()
	var outIno uint64
	if fi, err := os.Stat(tr.O + "/f.txt"); err != nil {
		t.Fatal(err)
	} else {
		outIno = fi.Sys().(*syscall.Stat_t).Ino
	}
	before := tr.listing(t)
	res := &raceResult{}
	var mu sync.Mutex
	escape := func(s string) {
		mu.Lock()
		res.escapes = append(res.escapes, s)
		mu.Unlock()
	}
	done := make(chan struct{})
	var stop atomic.Bool
	go func() {
		defer close(done)
		for !stop.Load() {
			if err := unix.Renameat2(unix.AT_FDCWD, tr.W+"/d", unix.AT_FDCWD, tr.W+"/d.alt", unix.RENAME_EXCHANGE); err != nil {
				escape("swapper: " + err.Error())
				return
			}
		}
	}()
	deadline := time.Now().Add(budget)
	var n atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := n.Add(1)
				if i > int64(iterations) || time.Now().After(deadline) || stop.Load() {
					return
				}
				res.attempts.Add(1)
				var err error
				var leaked string
				name := fmt.Sprintf("n%d", i)
				switch i % 6 {
				case 0:
					var b []byte
					b, err = f.ReadFile(tr.W + "/d/f.txt")
					if strings.Contains(string(b), secret) {
						leaked = "read the outside file"
					}
				case 1:
					var fi fs.FileInfo
					fi, err = f.Stat(tr.W + "/d/f.txt")
					if err == nil && fi.Sys().(*syscall.Stat_t).Ino == outIno {
						leaked = "stated the outside file"
					}
				case 2:
					var es []fs.DirEntry
					es, err = f.ReadDir(tr.W + "/d")
					if slices.ContainsFunc(es, func(e fs.DirEntry) bool { return e.Name() == "outside-only.txt" }) {
						leaked = "listed the outside directory"
					}
				case 3:
					err = f.WriteFile(tr.W+"/d/sub/"+name, []byte("x"))
					if _, serr := os.Lstat(tr.O + "/sub/" + name); serr == nil {
						leaked = "wrote into the outside directory"
					}
				case 4:
					err = f.MkdirAll(tr.W + "/d/sub/" + name + "/x")
					if _, serr := os.Lstat(tr.O + "/sub/" + name); serr == nil {
						leaked = "made a directory outside"
					}
				case 5:
					err = f.Create(tr.W + "/d/" + name)
					if _, serr := os.Lstat(tr.O + "/" + name); serr == nil {
						leaked = "created a file outside"
					}
				}
				switch {
				case leaked != "":
					escape(fmt.Sprintf("call %d: %s (err %v)", i, leaked, err))
					if stopEarly {
						stop.Store(true)
					}
				case err == nil:
					res.ok.Add(1)
					res.okBy[i%6].Add(1)
				case errors.Is(err, fs.ErrPermission):
					res.refused.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	stop.Store(true)
	<-done
	if after := tr.listing(t); after != before && len(res.escapes) == 0 {
		res.escapes = append(res.escapes, "the outside changed:\n"+before+"---\n"+after)
	}
	return res
}

func TestSwapRace(t *testing.T) {
	tr := newRaceTree(t)
	s, err := beneath.Open([]beneath.Root{{Path: tr.W}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res := swapRace(t, tr, setRaceFS{s}, 20000, 2*time.Second, false)
	t.Logf("%d calls: %d succeeded, %d refused", res.attempts.Load(), res.ok.Load(), res.refused.Load())
	for _, e := range res.escapes {
		t.Error(e)
	}
	// The race must have been run both ways: calls that went through the
	// directory and calls that met the link.
	if res.refused.Load() == 0 {
		t.Errorf("no call met the link: %d calls", res.attempts.Load())
	}
	for i, kind := range raceKinds {
		if n := res.okBy[i].Load(); n == 0 {
			t.Errorf("no %s went through the directory", kind)
		}
	}
}
