package memfs

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

func code(err error) ops.Errno { return ops.ErrnoOf(err) }

func TestFileSemantics(t *testing.T) {
	ctx := context.Background()
	f := New()
	if err := f.AddFile("/work/d/a.txt", []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.AddSymlink("d", "/work/link"); err != nil {
		t.Fatal(err)
	}
	if err := f.AddSymlink("/work/nowhere", "/work/broken"); err != nil {
		t.Fatal(err)
	}
	if err := f.AddSymlink("/work/loop", "/work/loop"); err != nil {
		t.Fatal(err)
	}

	r, err := f.Open(ctx, "/work/link/a.txt")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r)
	if string(b) != "hello" {
		t.Errorf("read through link: %q", b)
	}
	if _, err := f.Open(ctx, "/work/d"); code(err) != ops.EISDIR {
		t.Errorf("open dir: %v", err)
	} else if pe := (*fs.PathError)(nil); !errors.As(err, &pe) || pe.Op != "read" {
		t.Errorf("open dir op: %v", err)
	}
	if _, err := f.Open(ctx, "/work/nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
	if _, err := f.Stat(ctx, "/work/d/a.txt/x"); code(err) != ops.ENOTDIR {
		t.Errorf("through a file: %v", err)
	}
	if _, err := f.Stat(ctx, "/work/loop"); code(err) != ops.ELOOP {
		t.Errorf("loop: %v", err)
	}
	if _, err := f.Stat(ctx, "/work/broken"); code(err) != ops.ENOENT {
		t.Errorf("broken stat: %v", err)
	}
	if fi, err := f.Lstat(ctx, "/work/broken"); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("broken lstat: %v %v", fi, err)
	}
	if fi, err := f.Stat(ctx, "/work/link"); err != nil || !fi.IsDir() || fi.Name() != "d" {
		t.Errorf("stat link: %v %v", fi, err)
	}

	for in, want := range map[string]string{
		"/work/link/a.txt": "/work/d/a.txt",
		"/work/link/new":   "/work/d/new",
		"/work/broken":     "/work/nowhere",
		"/":                "/",
	} {
		if got, err := f.RealPath(ctx, in); err != nil || got != want {
			t.Errorf("realpath %s = %q %v, want %q", in, got, err, want)
		}
	}
	if _, err := f.RealPath(ctx, "/work/no/x"); code(err) != ops.ENOENT {
		t.Errorf("realpath missing parent: %v", err)
	}

	// WriteFile through a symlink updates the target and keeps its mode.
	f.Chmod("/work/d/a.txt", 0o600)
	if err := f.WriteFile(ctx, "/work/link/a.txt", []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if fi, _ := f.Stat(ctx, "/work/d/a.txt"); fi.Mode().Perm() != 0o600 || fi.Size() != 3 {
		t.Errorf("mode after write: %v", fi.Mode())
	}
	if err := f.WriteFile(ctx, "/work/missing/x", nil, 0o644); code(err) != ops.ENOENT {
		t.Errorf("write missing dir: %v", err)
	}
	if err := f.WriteFile(ctx, "/work/d", nil, 0o644); code(err) != ops.EISDIR {
		t.Errorf("write dir: %v", err)
	}

	if err := f.MkdirAll(ctx, "/work/d/x/y", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := f.MkdirAll(ctx, "/work/d/x/y", 0o755); err != nil {
		t.Errorf("mkdir existing: %v", err)
	}
	if err := f.MkdirAll(ctx, "/work/d/a.txt/z", 0o755); code(err) != ops.ENOTDIR {
		t.Errorf("mkdir under file: %v", err)
	}

	ents, err := f.ReadDir(ctx, "/work")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if got := len(names); got != 4 || names[0] != "broken" || names[1] != "d" || ents[2].Type()&fs.ModeSymlink == 0 {
		t.Errorf("readdir: %v", names)
	}

	// Permissions.
	f.Chmod("/work/d/a.txt", 0o200)
	if err := f.Access(ctx, "/work/d/a.txt", ops.AccessRead); code(err) != ops.EACCES {
		t.Errorf("access: %v", err)
	}
	if _, err := f.Open(ctx, "/work/d/a.txt"); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("open unreadable: %v", err)
	}
	if err := f.Access(ctx, "/work/d/a.txt", ops.AccessWrite); err != nil {
		t.Errorf("access write: %v", err)
	}

	if err := f.Remove(ctx, "/work/d"); code(err) != ops.ENOTEMPTY {
		t.Errorf("remove non-empty: %v", err)
	}
	if err := f.Remove(ctx, "/work/broken"); err != nil {
		t.Errorf("remove link: %v", err)
	}
}

func TestWriterAndKnobs(t *testing.T) {
	ctx := context.Background()
	f := New()
	w, err := f.OpenWriter(ctx, "/tmp/pi-spill/log", os.O_CREATE|os.O_EXCL|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	r0, _ := f.Open(ctx, "/tmp/pi-spill/log")
	io.WriteString(w, "ab")
	io.WriteString(w, "cd")
	w.Close()
	if b, _ := f.Contents("/tmp/pi-spill/log"); string(b) != "abcd" {
		t.Errorf("writer: %q", b)
	}
	if b, _ := io.ReadAll(r0); len(b) != 0 {
		t.Errorf("reader opened before the writes saw %q", b)
	}
	if _, err := f.OpenWriter(ctx, "/tmp/pi-spill/log", os.O_CREATE|os.O_EXCL, 0o600); code(err) != ops.EEXIST {
		t.Errorf("excl: %v", err)
	}

	boom := errors.New("boom")
	f.SetMockErr(func(op, name string) error {
		if op == "stat" && name == "/work" {
			return boom
		}
		return nil
	})
	if _, err := f.Stat(ctx, "/work"); err != boom {
		t.Errorf("mock: %v", err)
	}
	if _, err := f.Lstat(ctx, "/work"); err != nil {
		t.Errorf("mock hit lstat: %v", err)
	}
	f.SetMockErr(nil)

	err = f.Run(ctx, &ops.Cmd{Command: "true"})
	var se *ops.StartError
	if !errors.As(err, &se) || !errors.Is(err, ops.ErrUnsupported) {
		t.Errorf("run: %v", err)
	}
	f.SetRunFunc(func(context.Context, *ops.Cmd) error { return nil })
	if err := f.Run(ctx, &ops.Cmd{Command: "true"}); err != nil {
		t.Errorf("run func: %v", err)
	}
}
