//go:build linux

package beneath_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// naiveFS is today's check-then-use confinement (sandbox.Confine's) over
// os: resolve the real path, check it is under the root, then use the name.
type naiveFS struct{ root string }

var errOutside = &fs.PathError{Op: "confine", Err: fs.ErrPermission}

func (n naiveFS) check(name string) error {
	rest := ""
	for p := name; ; p = filepath.Dir(p) {
		rp, err := filepath.EvalSymlinks(p)
		if err == nil {
			rp = filepath.Join(rp, rest)
			if rp != n.root && !strings.HasPrefix(rp, n.root+"/") {
				return errOutside
			}
			return nil
		}
		if p == "/" {
			return err
		}
		rest = filepath.Join(filepath.Base(p), rest)
	}
}

func (n naiveFS) ReadFile(name string) ([]byte, error) {
	if err := n.check(name); err != nil {
		return nil, err
	}
	return os.ReadFile(name)
}

func (n naiveFS) Stat(name string) (fs.FileInfo, error) {
	if err := n.check(name); err != nil {
		return nil, err
	}
	return os.Stat(name)
}

func (n naiveFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := n.check(name); err != nil {
		return nil, err
	}
	return os.ReadDir(name)
}

func (n naiveFS) WriteFile(name string, data []byte) error {
	if err := n.check(name); err != nil {
		return err
	}
	return os.WriteFile(name, data, 0o644)
}

func (n naiveFS) MkdirAll(name string) error {
	if err := n.check(name); err != nil {
		return err
	}
	return os.MkdirAll(name, 0o755)
}

func (n naiveFS) Create(name string) error {
	if err := n.check(name); err != nil {
		return err
	}
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	return f.Close()
}

// TestSwapRaceCatchesCheckThenUse shows the swap-race tests have teeth:
// the same harnesses, run against the check-then-use approach, see an
// escape.
func TestSwapRaceCatchesCheckThenUse(t *testing.T) {
	t.Run("dir", func(t *testing.T) {
		tr := newRaceTree(t)
		res := swapRace(t, tr, tr.W+"/d", tr.W+"/d.alt", dirSwapOps(t, tr, naiveFS{root: tr.W}), 200000, 10*time.Second, true)
		t.Logf("%d calls until the first escape: %v", res.attempts.Load(), res.escapes)
		if len(res.escapes) == 0 {
			t.Errorf("no escape in %d calls: the harness would not catch a check-then-use race", res.attempts.Load())
		}
	})
	t.Run("file", func(t *testing.T) {
		tr := newRaceTree(t)
		res := swapRaceRepair(t, tr, tr.W+"/d/f.txt", tr.W+"/d/f.alt", fileSwapOps(t, tr, naiveFS{root: tr.W}), 200000, 10*time.Second, true, tr.relinkFile)
		t.Logf("%d calls until the first escape: %v", res.attempts.Load(), res.escapes)
		if len(res.escapes) == 0 {
			t.Errorf("no escape in %d calls: the harness would not catch a check-then-use race", res.attempts.Load())
		}
	})
}
