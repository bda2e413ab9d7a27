//go:build linux

package beneath_test

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops/internal/beneath"
)

// TestReadDirTypes: the typed listing has ReadDir's names and types, every
// kind of entry included, and an entry's Info is its Lstat.
func TestReadDirTypes(t *testing.T) {
	root := t.TempDir()
	d := filepath.Join(root, "d")
	os.Mkdir(d, 0o755)
	os.WriteFile(filepath.Join(d, "file"), []byte("abc"), 0o644)
	os.Mkdir(filepath.Join(d, "sub"), 0o755)
	os.Symlink("/etc/passwd", filepath.Join(d, "out-link"))
	if err := syscall.Mkfifo(filepath.Join(d, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if l, err := net.Listen("unix", filepath.Join(d, "sock")); err == nil {
		defer l.Close()
	}
	s := open(t, beneath.Root{Path: root})
	want, err := s.ReadDir(d)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.ReadDirTypes(d)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || len(got) < 4 {
		t.Fatalf("ReadDirTypes listed %d entries, ReadDir %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Name() != want[i].Name() || got[i].Type() != want[i].Type() {
			t.Errorf("entry %d: %s %v, want %s %v", i, got[i].Name(), got[i].Type(), want[i].Name(), want[i].Type())
		}
		fi, err := got[i].Info()
		wfi, _ := want[i].Info()
		if err != nil || fi.Size() != wfi.Size() || fi.Mode() != wfi.Mode() {
			t.Errorf("%s: Info = %v, %v; want %v", got[i].Name(), fi, err, wfi)
		}
	}
	if _, err := s.ReadDirTypes(filepath.Join(d, "file")); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("a typed listing of a file = %v, want ENOTDIR", err)
	}
	if _, err := s.ReadDirTypes("/etc"); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("a typed listing outside the root = %v, want a refusal", err)
	}
}

// TestOpenFastKeepsRules: reads that the one-call open takes still follow
// the rules: a link inside the root is followed, one out is refused, a
// nested read-only root is still entered (and read), a write is not
// taken by it.
func TestOpenFastKeepsRules(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "a", "ro"), 0o755)
	os.WriteFile(filepath.Join(root, "a", "f"), []byte("plain"), 0o644)
	os.WriteFile(filepath.Join(root, "a", "ro", "g"), []byte("nested"), 0o644)
	os.Symlink("f", filepath.Join(root, "a", "in-link"))
	os.Symlink("/etc/hostname", filepath.Join(root, "a", "out-link"))
	s := open(t, beneath.Root{Path: filepath.Join(root, "a", "ro"), ReadOnly: true}, beneath.Root{Path: root})
	for name, want := range map[string]string{"a/f": "plain", "a/in-link": "plain", "a/ro/g": "nested"} {
		if got, err := readAll(s, filepath.Join(root, name)); err != nil || got != want {
			t.Errorf("read %s = %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := readAll(s, filepath.Join(root, "a", "out-link")); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("read through a link out = %v, want a refusal", err)
	}
	if _, err := s.OpenFile(filepath.Join(root, "a", "ro", "g"), os.O_WRONLY, 0); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("write in the read-only root = %v, want a refusal", err)
	}
}
