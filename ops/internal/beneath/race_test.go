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

// raceTree: B/w is the root; B/w/d is a directory that a swapper may keep
// exchanging with B/w/d.alt, a link to B/o, outside; B/w/d/f.txt is a file
// it may keep exchanging with B/w/d/f.alt, a link to B/o/f.txt. Both
// directories hold f.txt and sub/; B/o also holds outside-only.txt.
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
	if err := os.Symlink(tr.O+"/f.txt", tr.W+"/d/f.alt"); err != nil {
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

type raceResult struct {
	escapes  []string
	ok       atomic.Int64 // calls that succeeded
	refused  atomic.Int64 // calls refused by confinement
	attempts atomic.Int64
	okBy     []atomic.Int64 // by op
}

// raceOp is one kind of call; it reports what escaped, if anything.
type raceOp struct {
	kind string
	call func(i int64) (leaked string, err error)
}

// dirSwapOps go through B/w/d, which is swapped with a link to B/o.
func dirSwapOps(t *testing.T, tr raceTree, f raceFS) []raceOp {
	outIno := ino(t, tr.O+"/f.txt")
	return []raceOp{
		{"ReadFile", func(i int64) (string, error) {
			b, err := f.ReadFile(tr.W + "/d/f.txt")
			return leakIf(strings.Contains(string(b), secret), "read the outside file"), err
		}},
		{"Stat", func(i int64) (string, error) {
			fi, err := f.Stat(tr.W + "/d/f.txt")
			return leakIf(err == nil && fi.Sys().(*syscall.Stat_t).Ino == outIno, "stated the outside file"), err
		}},
		{"ReadDir", func(i int64) (string, error) {
			es, err := f.ReadDir(tr.W + "/d")
			return leakIf(slices.ContainsFunc(es, func(e fs.DirEntry) bool { return e.Name() == "outside-only.txt" }), "listed the outside directory"), err
		}},
		{"WriteFile", func(i int64) (string, error) {
			name := fmt.Sprintf("n%d", i)
			err := f.WriteFile(tr.W+"/d/sub/"+name, []byte("x"))
			return leakIf(exists(tr.O+"/sub/"+name), "wrote into the outside directory"), err
		}},
		{"MkdirAll", func(i int64) (string, error) {
			name := fmt.Sprintf("n%d", i)
			err := f.MkdirAll(tr.W + "/d/sub/" + name + "/x")
			return leakIf(exists(tr.O+"/sub/"+name), "made a directory outside"), err
		}},
		{"Create", func(i int64) (string, error) {
			name := fmt.Sprintf("n%d", i)
			err := f.Create(tr.W + "/d/" + name)
			return leakIf(exists(tr.O+"/"+name), "created a file outside"), err
		}},
	}
}

// fileSwapOps use B/w/d/f.txt, which is swapped with a link to B/o/f.txt
// (the final element, not a directory on the way).
func fileSwapOps(t *testing.T, tr raceTree, f raceFS) []raceOp {
	outIno := ino(t, tr.O+"/f.txt")
	changed := func() bool {
		b, err := os.ReadFile(tr.O + "/f.txt")
		return err != nil || string(b) != secret+"\n"
	}
	return []raceOp{
		{"ReadFile", func(i int64) (string, error) {
			b, err := f.ReadFile(tr.W + "/d/f.txt")
			return leakIf(strings.Contains(string(b), secret), "read the outside file"), err
		}},
		{"Stat", func(i int64) (string, error) {
			fi, err := f.Stat(tr.W + "/d/f.txt")
			return leakIf(err == nil && fi.Sys().(*syscall.Stat_t).Ino == outIno, "stated the outside file"), err
		}},
		{"WriteFile", func(i int64) (string, error) {
			err := f.WriteFile(tr.W+"/d/f.txt", []byte("inside\n"))
			return leakIf(changed(), "replaced the outside file"), err
		}},
		{"Create", func(i int64) (string, error) {
			err := f.Create(tr.W + "/d/f.txt")
			return leakIf(changed(), "truncated the outside file"), err
		}},
	}
}

// relinkFile puts the link to the outside file back at B/w/d/f.alt when a
// write renamed a file onto it (neither f.txt nor f.alt is a link).
func (tr raceTree) relinkFile() error {
	for _, p := range []string{tr.W + "/d/f.txt", tr.W + "/d/f.alt"} {
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil
		}
	}
	tmp := tr.W + "/d/f.relink"
	os.Remove(tmp)
	if err := os.Symlink(tr.O+"/f.txt", tmp); err != nil {
		return err
	}
	return os.Rename(tmp, tr.W+"/d/f.alt")
}

func ino(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func leakIf(cond bool, what string) string {
	if cond {
		return what
	}
	return ""
}

// swapRace runs 4 workers calling ops in turn while a swapper keeps
// exchanging a and b (renameat2 RENAME_EXCHANGE: atomic), for at most
// iterations calls or budget, and returns what escaped. With stopEarly it
// ends at the first escape. Afterwards B/o must be as it was.
func swapRace(t *testing.T, tr raceTree, a, b string, ops []raceOp, iterations int, budget time.Duration, stopEarly bool) *raceResult {
	return swapRaceRepair(t, tr, a, b, ops, iterations, budget, stopEarly, nil)
}

// swapRaceRepair is swapRace with repair called by the swapper before each
// exchange (a call may have replaced the link by renaming onto it).
func swapRaceRepair(t *testing.T, tr raceTree, a, b string, ops []raceOp, iterations int, budget time.Duration, stopEarly bool, repair func() error) *raceResult {
	t.Helper()
	before := tr.listing(t)
	res := &raceResult{okBy: make([]atomic.Int64, len(ops))}
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
			if repair != nil {
				if err := repair(); err != nil {
					escape("swapper: " + err.Error())
					return
				}
			}
			if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
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
				op := ops[int(i)%len(ops)]
				leaked, err := op.call(i)
				switch {
				case leaked != "":
					escape(fmt.Sprintf("call %d: %s (%s: err %v)", i, leaked, op.kind, err))
					if stopEarly {
						stop.Store(true)
					}
				case err == nil:
					res.ok.Add(1)
					res.okBy[int(i)%len(ops)].Add(1)
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

// checkRace fails t on any escape, and unless both sides of the swap were
// met (calls refused, every op succeeding at least once).
func checkRace(t *testing.T, res *raceResult, ops []raceOp) {
	t.Helper()
	t.Logf("%d calls: %d succeeded, %d refused", res.attempts.Load(), res.ok.Load(), res.refused.Load())
	for _, e := range res.escapes {
		t.Error(e)
	}
	if res.refused.Load() == 0 {
		t.Errorf("no call met the link: %d calls", res.attempts.Load())
	}
	for i, op := range ops {
		if res.okBy[i].Load() == 0 {
			t.Errorf("no %s went through the real entry", op.kind)
		}
	}
}

func TestSwapRaceDir(t *testing.T) {
	for _, walk := range []bool{false, true} {
		t.Run(map[bool]string{false: "openat2", true: "walk"}[walk], func(t *testing.T) {
			withoutOpenat2(t, walk)
			tr := newRaceTree(t)
			s, err := beneath.Open([]beneath.Root{{Path: tr.W}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ops := dirSwapOps(t, tr, setRaceFS{s})
			checkRace(t, swapRace(t, tr, tr.W+"/d", tr.W+"/d.alt", ops, 20000, 2*time.Second, false), ops)
		})
	}
}

func TestSwapRaceFile(t *testing.T) {
	for _, walk := range []bool{false, true} {
		t.Run(map[bool]string{false: "openat2", true: "walk"}[walk], func(t *testing.T) {
			withoutOpenat2(t, walk)
			tr := newRaceTree(t)
			s, err := beneath.Open([]beneath.Root{{Path: tr.W}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ops := fileSwapOps(t, tr, setRaceFS{s})
			checkRace(t, swapRaceRepair(t, tr, tr.W+"/d/f.txt", tr.W+"/d/f.alt", ops, 20000, 2*time.Second, false, tr.relinkFile), ops)
		})
	}
}
