package execops

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// The parsing that needs no target; the scripts run against real engines in
// ../../../integration (docker without the helper).

func TestErrnoFromStderr(t *testing.T) {
	for _, c := range []struct {
		stderr string
		want   ops.Errno
	}{
		{"stat: can't stat '/x': No such file or directory\n", ops.ENOENT},
		{"stat: cannot stat '/x': No such file or directory\n", ops.ENOENT},
		{"sh: can't create /x/y: nonexistent directory\n", ops.ENOENT},
		{"/bin/sh: 1: cannot create /x/y: Directory nonexistent\n", ops.ENOENT},
		{"cat: can't open '/x': Permission denied\n", ops.EACCES},
		{"cat: read error: Is a directory\n", ops.EISDIR},
		{"mkdir: can't create directory '/f/x': Not a directory\n", ops.ENOTDIR},
		{"touch: /x: Read-only file system\n", ops.EROFS},
		{"cat: write error: No space left on device\n", ops.ENOSPC},
		{"stat: can't stat '/l': Too many levels of symbolic links\n", ops.ELOOP},
		{"stat: can't stat '/l': Symbolic link loop\n", ops.ELOOP},
		{"stat: /xxx: File name too long\n", ops.ENAMETOOLONG},
		{"rmdir: '/d': Directory not empty\n", ops.ENOTEMPTY},
		{"mkdir: cannot create directory '/f': File exists\n", ops.EEXIST},
		{"cat: can't open '/x': Too many open files\n", ops.EMFILE},
		{"cat: can't open '/x': Too many open files in system\n", ops.ENFILE},
		{"noise\n" + errnoMarker + "EISDIR\n", ops.EISDIR},
		{"something else\n", ""},
	} {
		if got := errnoFromStderr(c.stderr); got != c.want {
			t.Errorf("errnoFromStderr(%q) = %q, want %q", c.stderr, got, c.want)
		}
	}
}

func TestPathErr(t *testing.T) {
	o := New(Config{Name: "docker"})
	err := o.pathErr("open", "/w/x", "cat: can't open '/w/x': No such file or directory\n")
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "open" || pe.Path != "/w/x" || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("pathErr = %#v", err)
	}
	err = o.pathErr("open", "/w/x", "weird failure\n")
	if !errors.As(err, &pe) || ops.ErrnoOf(err) != "" || pe.Err.Error() != "docker: weird failure" {
		t.Fatalf("unmapped pathErr = %#v", err)
	}
}

func TestParseStat(t *testing.T) {
	fi, err := parseStat("f", "81a4 12 1700000000")
	if err != nil || fi.Mode() != 0o644 || fi.Size() != 12 || fi.ModTime().Unix() != 1700000000 || fi.Name() != "f" {
		t.Fatalf("parseStat = %+v, %v", fi, err)
	}
	for raw, want := range map[uint32]fs.FileMode{
		0o040755: fs.ModeDir | 0o755,
		0o120777: fs.ModeSymlink | 0o777,
		0o041777: fs.ModeDir | fs.ModeSticky | 0o777,
		0o104755: fs.ModeSetuid | 0o755,
		0o010644: fs.ModeNamedPipe | 0o644,
		0o020666: fs.ModeDevice | fs.ModeCharDevice | 0o666,
	} {
		if got := unixMode(raw); got != want {
			t.Errorf("unixMode(%o) = %v, want %v", raw, got, want)
		}
	}
	if _, err := parseStat("f", "garbage"); err == nil {
		t.Error("parseStat(garbage) succeeded")
	}
}

func TestParseListing(t *testing.T) {
	out := []byte("a\x00b\nc\x00\x0081a4 1 0\n41ed 2 0\n" + ".h\x00\x00a1ff 3 0\n")
	es, err := parseListing(out)
	if err != nil || len(es) != 3 || es[1].Name() != "b\nc" || !es[1].IsDir() || es[2].Type() != fs.ModeSymlink {
		t.Fatalf("parseListing = %v, %v", es, err)
	}
	if es, err := parseListing(nil); err != nil || len(es) != 0 {
		t.Fatalf("empty listing = %v, %v", es, err)
	}
	if _, err := parseListing([]byte("a\x00b\x00\x0081a4 1 0\n")); err == nil {
		t.Fatal("a missing stat line was accepted")
	}
}
