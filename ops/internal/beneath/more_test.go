//go:build linux

package beneath_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops/internal/beneath"
)

func open(t *testing.T, roots ...beneath.Root) *beneath.Set {
	t.Helper()
	s, err := beneath.Open(roots)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func readAll(s *beneath.Set, name string) (string, error) {
	f, err := s.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	return string(b), err
}

// A single writable root "/" is the unconfined mode: links out are
// followed, anything may be written.
func TestUnconfined(t *testing.T) {
	tr := newTree(t)
	s := open(t, beneath.Root{Path: "/"})
	for _, name := range []string{tr.W + "/link-file", tr.W + "/chain1", tr.W + "/sub/deep", "/proc/self/root" + tr.O + "/secret.txt", tr.W + "/dotdot-out/secret.txt"} {
		if got, err := readAll(s, name); err != nil || got != secret+"\n" {
			t.Errorf("read %s: %q, %v", name, got, err)
		}
	}
	if err := s.WriteFileAtomic(tr.W+"/dangling", strings.NewReader("made"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(tr.O + "/created.txt"); err != nil || string(b) != "made" {
		t.Errorf("write through a dangling link: %q, %v", b, err)
	}
	if fi, err := s.Stat("/"); err != nil || !fi.IsDir() {
		t.Errorf("stat /: %v", err)
	}
	if rp, err := s.RealPath(tr.W + "/link-dir/dir/inner.txt"); err != nil || rp != tr.O+"/dir/inner.txt" {
		t.Errorf("realpath: %q, %v", rp, err)
	}
	if err := s.Remove("/"); outcome(err) != "EBUSY" {
		t.Errorf("remove /: %v", err)
	}
}

// Open resolves roots given through links; names may use either spelling.
func TestRootThroughLink(t *testing.T) {
	tr := newTree(t)
	if err := os.Symlink(tr.W, tr.B+"/wlink"); err != nil {
		t.Fatal(err)
	}
	s := open(t, beneath.Root{Path: tr.B + "/wlink/"})
	if rs := s.Roots(); len(rs) != 1 || rs[0].Path != tr.W || rs[0].ReadOnly {
		t.Errorf("roots %v, want %s", rs, tr.W)
	}
	for _, name := range []string{tr.B + "/wlink/file.txt", tr.W + "/file.txt"} {
		if got, err := readAll(s, name); err != nil || got != "inside\n" {
			t.Errorf("read %s: %q, %v", name, got, err)
		}
	}
	if _, err := readAll(s, tr.B+"/wlink/link-file"); outcome(err) != "outside" {
		t.Errorf("link out through the root's link: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	tr := newTree(t)
	for _, rs := range [][]beneath.Root{
		nil,
		{{Path: "relative"}},
		{{Path: tr.W + "/missing"}},
		{{Path: tr.W + "/file.txt"}},
		{{Path: tr.W}, {Path: tr.W + "/missing"}},
	} {
		if s, err := beneath.Open(rs); err == nil || !strings.HasPrefix(err.Error(), "beneath: ") {
			s.Close()
			t.Errorf("Open(%v): %v, want a beneath: error", rs, err)
		}
	}
}

// Link chains: the kernel's limit (40) is ours, and loops end in ELOOP.
func TestLinkLimit(t *testing.T) {
	tr := newTree(t)
	s := open(t, tr.roots()...)
	for _, n := range []int{39, 40, 41} {
		dir := fmt.Sprintf("%s/chain%d", tr.W, n)
		os.Mkdir(dir, 0o755)
		for i := 0; i < n; i++ {
			target := fmt.Sprintf("l%d", i+1)
			if i+1 == n {
				target = tr.W + "/file.txt"
			}
			if err := os.Symlink(target, fmt.Sprintf("%s/l%d", dir, i)); err != nil {
				t.Fatal(err)
			}
		}
		_, kerr := os.ReadFile(dir + "/l0")
		_, err := readAll(s, dir+"/l0")
		if outcome(err) != outcome(kerr) {
			t.Errorf("%d links: %v, the kernel says %v", n, err, kerr)
		}
	}
	if _, err := readAll(s, tr.W+"/chain41/l0"); !errors.Is(err, syscall.ELOOP) {
		t.Errorf("41 links: %v, want ELOOP", err)
	}
}

// An overwrite keeps the mode (and owner); a new file gets perm minus the
// umask; nothing is left beside it.
func TestWriteFileAtomicKeepsMode(t *testing.T) {
	tr := newTree(t)
	s := open(t, tr.roots()...)
	p := tr.W + "/file.txt"
	if err := os.Chmod(p, 0o751); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(p, 1234, 5678); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.WriteFileAtomic(tr.W+"/abs-in", strings.NewReader("new content"), 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != 0o751 {
		t.Errorf("mode %v, want -rwxr-x--x", fi.Mode())
	}
	if st := fi.Sys().(*syscall.Stat_t); os.Geteuid() == 0 && (st.Uid != 1234 || st.Gid != 5678) {
		t.Errorf("owner %d:%d, want 1234:5678", st.Uid, st.Gid)
	}
	if b, _ := os.ReadFile(p); string(b) != "new content" {
		t.Errorf("content %q", b)
	}
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	if err := s.WriteFileAtomic(tr.W+"/fresh", strings.NewReader("x"), 0o666); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(tr.W + "/fresh"); err != nil || fi.Mode() != 0o644 {
		t.Errorf("new file: %v, %v; want -rw-r--r--", fi.Mode(), err)
	}
	es, _ := os.ReadDir(tr.W)
	for _, e := range es {
		if strings.Contains(e.Name(), "pi-tmp") {
			t.Errorf("left %s", e.Name())
		}
	}
}

// A reader that fails leaves the old content and no temp file.
func TestWriteFileAtomicReaderFails(t *testing.T) {
	tr := newTree(t)
	s := open(t, tr.roots()...)
	boom := errors.New("boom")
	err := s.WriteFileAtomic(tr.W+"/file.txt", io.MultiReader(strings.NewReader("partial"), errReader{boom}), 0o644)
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "write" || !errors.Is(err, boom) {
		t.Errorf("err %v, want a write PathError wrapping boom", err)
	}
	if b, _ := os.ReadFile(tr.W + "/file.txt"); string(b) != "inside\n" {
		t.Errorf("content %q", b)
	}
	matches, _ := filepath.Glob(tr.W + "/.*pi-tmp*")
	if len(matches) != 0 {
		t.Errorf("left %v", matches)
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// Errors are *fs.PathError values with the backends' Op names, the name as
// given, and a syscall.Errno.
func TestErrorShape(t *testing.T) {
	tr := newTree(t)
	s := open(t, tr.roots()...)
	for _, c := range []struct {
		op   string
		call func() error
	}{
		{"open", func() error { _, err := s.OpenFile(tr.W+"/missing", os.O_RDONLY, 0); return err }},
		{"stat", func() error { _, err := s.Stat(tr.W + "/missing"); return err }},
		{"lstat", func() error { _, err := s.Lstat(tr.W + "/missing"); return err }},
		{"scandir", func() error { _, err := s.ReadDir(tr.W + "/missing"); return err }},
		{"realpath", func() error { _, err := s.RealPath(tr.W + "/missing/x"); return err }},
		{"access", func() error { return s.Access(tr.W+"/missing", 0) }},
		{"unlink", func() error { return s.Remove(tr.W + "/missing") }},
		{"open", func() error { return s.WriteFileAtomic(tr.W+"/missing/x", strings.NewReader(""), 0o644) }},
	} {
		err := c.call()
		var pe *fs.PathError
		var errno syscall.Errno
		if !errors.As(err, &pe) || pe.Op != c.op || !strings.HasPrefix(pe.Path, tr.W+"/missing") || !errors.As(err, &errno) || errno != syscall.ENOENT {
			t.Errorf("%s: %#v, want *fs.PathError{Op: %q} wrapping ENOENT", c.op, err, c.op)
		}
	}
	_, err := s.Stat(tr.W + "/link-file")
	var pe *fs.PathError
	var oe *beneath.OutsideError
	if !errors.As(err, &pe) || pe.Op != "confine" || !errors.As(err, &oe) || oe.Path != tr.W+"/link-file" || oe.Resolved != tr.O+"/secret.txt" || oe.Write || !errors.Is(err, fs.ErrPermission) {
		t.Errorf("outside: %#v", err)
	}
	err = s.WriteFileAtomic(tr.R+"/file", strings.NewReader(""), 0o644)
	if !errors.As(err, &oe) || !oe.Write || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("read-only: %v", err)
	}
}

// Lstat and ReadDir report entries as they are; Stat follows.
func TestInfo(t *testing.T) {
	tr := newTree(t)
	s := open(t, tr.roots()...)
	es, err := s.ReadDir(tr.W)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadDir(tr.W)
	if len(es) != len(want) {
		t.Fatalf("%d entries, want %d", len(es), len(want))
	}
	for i, e := range es {
		wi, _ := want[i].Info()
		gi, err := e.Info()
		if err != nil || e.Name() != want[i].Name() || e.Type() != want[i].Type() || gi.Mode() != wi.Mode() || gi.Size() != wi.Size() || !gi.ModTime().Equal(wi.ModTime()) {
			t.Errorf("entry %d: %v %v, want %v %v", i, e, gi.Mode(), want[i], wi.Mode())
		}
	}
	fi, err := s.Stat(tr.W + "/abs-in")
	wi, _ := os.Stat(tr.W + "/abs-in")
	if err != nil || fi.Name() != "abs-in" || fi.Mode() != wi.Mode() || fi.Size() != wi.Size() || fi.Sys().(*syscall.Stat_t).Ino != wi.Sys().(*syscall.Stat_t).Ino {
		t.Errorf("stat: %v %v", fi, err)
	}
}
