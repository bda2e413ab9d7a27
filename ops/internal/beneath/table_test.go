//go:build linux

package beneath_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/beneath"
	"github.com/pi-sandbox/pi-sandbox/ops/local"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
)

const secret = "TOP-SECRET-beneath"

// tree is a fresh layout: B/w (working directory, writable root),
// B/w/nested (a read-only root inside it, listed first), B/s (spill
// directory, writable root), B/r (read-only root), B/o (outside).
type tree struct{ B, W, S, R, O string }

func newTree(t *testing.T) tree {
	t.Helper()
	b, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tr := tree{B: b, W: b + "/w", S: b + "/s", R: b + "/r", O: b + "/o"}
	files := map[string]string{
		tr.W + "/file.txt":       "inside\n",
		tr.W + "/sub/f.txt":      "sub\n",
		tr.W + "/nested/n.txt":   "nested\n",
		tr.S + "/spilled.txt":    "spilled\n",
		tr.R + "/file":           "ro\n",
		tr.R + "/d/x":            "rox\n",
		tr.O + "/secret.txt":     secret + "\n",
		tr.O + "/victim.txt":     "victim\n",
		tr.O + "/dir/inner.txt":  secret + " inner\n",
		tr.O + "/dir/sub/.keep":  "",
		tr.B + "/beside.txt":     secret + " beside\n",
		tr.W + "/empty/.keep":    "",
		tr.W + "/nested/d/.keep": "",
	}
	for p, c := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := [][2]string{
		{tr.O + "/secret.txt", "link-file"},
		{"../o/secret.txt", "link-rel"},
		{tr.O, "link-dir"},
		{tr.O + "/victim.txt", "link-victim"},
		{tr.O + "/created.txt", "dangling"},
		{tr.O + "/newdir/created.txt", "dangling-deep"},
		{tr.W + "/created-in.txt", "dangling-in"},
		{tr.W + "/missing-dir", "dangling-dir-in"},
		{"chain2", "chain1"},
		{tr.O + "/secret.txt", "chain2"},
		{"../../o/secret.txt", "sub/deep"},
		{tr.W + "/file.txt", "abs-in"},
		{"sub/../file.txt", "rel-in"},
		{tr.S + "/spilled.txt", "to-spill"},
		{tr.S, "to-spill-dir"},
		{"../r/file", "to-ro"},
		{tr.R, "to-ro-dir"},
		{"loop2", "loop1"},
		{"loop1", "loop2"},
		{"..", "sub/up"},
		{"up/file.txt", "sub/up-file"},
		{"sub/up/../o", "dotdot-out"},
		{"/proc/self/root" + tr.O, "proc-root"},
		{"sub", "to-sub"},
		{"file.txt/.", "file-dot"},
		{"file.txt/../file.txt", "file-dotdot"},
		{"to-sub/../file.txt", "through-link-dotdot"},
		{tr.W + "/file.txt", tr.O + "/link-in"},
		{tr.W + "/sub", tr.R + "/to-w-sub"},
	}
	for _, l := range links {
		p := l[1]
		if !filepath.IsAbs(p) {
			p = tr.W + "/" + p
		}
		if err := os.Symlink(l[0], p); err != nil {
			t.Fatal(err)
		}
	}
	return tr
}

func (tr tree) roots() []beneath.Root {
	return []beneath.Root{{Path: tr.W + "/nested", ReadOnly: true}, {Path: tr.W}, {Path: tr.S}, {Path: tr.R, ReadOnly: true}}
}

func (tr tree) expand(s string) string {
	return strings.NewReplacer("$W", tr.W, "$S", tr.S, "$R", tr.R, "$O", tr.O, "$B", tr.B).Replace(s)
}

// snapshot lists everything under B/o and beside it: names, modes, contents
// and link targets.
func (tr tree) snapshot(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, root := range []string{tr.O, tr.B + "/beside.txt"} {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				t.Fatal(err)
			}
			fi, _ := d.Info()
			b.WriteString(p + " " + fi.Mode().String() + " " + fi.ModTime().String())
			if fi.Mode().IsRegular() {
				c, _ := os.ReadFile(p)
				b.WriteString(" " + string(c))
			} else if fi.Mode()&fs.ModeSymlink != 0 {
				l, _ := os.Readlink(p)
				b.WriteString(" -> " + l)
			}
			b.WriteString("\n")
			return nil
		})
	}
	es, _ := os.ReadDir(tr.B)
	for _, e := range es {
		b.WriteString(e.Name() + "\n")
	}
	return b.String()
}

// fsys is the operations under test, for the package and for today's
// sandbox.Confine over the local backend.
type fsys interface {
	run(op, name string) (string, error)
}

type setFS struct{ s *beneath.Set }

func (f setFS) run(op, name string) (string, error) {
	s := f.s
	switch op {
	case "read":
		fl, err := s.OpenFile(name, os.O_RDONLY, 0)
		if err != nil {
			return "", err
		}
		defer fl.Close()
		b, err := io.ReadAll(fl)
		return string(b), err
	case "create":
		fl, err := s.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return "", err
		}
		_, err = fl.WriteString("created")
		return "", errors.Join(err, fl.Close())
	case "create-excl":
		fl, err := s.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return "", err
		}
		return "", fl.Close()
	case "stat", "lstat":
		st := s.Stat
		if op == "lstat" {
			st = s.Lstat
		}
		fi, err := st(name)
		if err != nil {
			return "", err
		}
		return describe(fi), nil
	case "readdir":
		es, err := s.ReadDir(name)
		return names(es), err
	case "write":
		return "", s.WriteFileAtomic(name, strings.NewReader("written"), 0o644)
	case "mkdirall":
		return "", s.MkdirAll(name, 0o755)
	case "remove":
		return "", s.Remove(name)
	case "realpath":
		return s.RealPath(name)
	case "access-r":
		return "", s.Access(name, 4)
	case "access-w":
		return "", s.Access(name, 2)
	}
	panic(op)
}

type confineFS struct{ b ops.Backend }

func (f confineFS) run(op, name string) (string, error) {
	ctx, b := context.Background(), f.b
	switch op {
	case "read":
		r, err := b.Open(ctx, name)
		if err != nil {
			return "", err
		}
		defer r.Close()
		c, err := io.ReadAll(r)
		return string(c), err
	case "create", "create-excl":
		flag := os.O_CREATE | os.O_TRUNC
		if op == "create-excl" {
			flag = os.O_CREATE | os.O_EXCL
		}
		w, err := b.OpenWriter(ctx, name, flag, 0o644)
		if err != nil {
			return "", err
		}
		if op == "create" {
			_, err = io.WriteString(w, "created")
		}
		return "", errors.Join(err, w.Close())
	case "stat", "lstat":
		st := b.Stat
		if op == "lstat" {
			st = b.Lstat
		}
		fi, err := st(ctx, name)
		if err != nil {
			return "", err
		}
		return describe(fi), nil
	case "readdir":
		es, err := b.ReadDir(ctx, name)
		return names(es), err
	case "write":
		return "", b.WriteFile(ctx, name, []byte("written"), 0o644)
	case "mkdirall":
		return "", b.MkdirAll(ctx, name, 0o755)
	case "remove":
		return "", b.Remove(ctx, name)
	case "realpath":
		return b.RealPath(ctx, name)
	case "access-r":
		return "", b.Access(ctx, name, ops.AccessRead)
	case "access-w":
		return "", b.Access(ctx, name, ops.AccessWrite)
	}
	panic(op)
}

func describe(fi fs.FileInfo) string {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return "link"
	case fi.IsDir():
		return "dir " + fi.Name()
	}
	return "file " + fi.Name()
}

func names(es []fs.DirEntry) string {
	var ns []string
	for _, e := range es {
		ns = append(ns, e.Name())
	}
	return strings.Join(ns, ",")
}

// outcome classifies an error: "ok", "outside" (refused), "readonly"
// (refused write), or the errno code.
func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	var oe *beneath.OutsideError
	if errors.As(err, &oe) {
		if !errors.Is(err, fs.ErrPermission) {
			return "outside without ErrPermission"
		}
		if oe.Write {
			return "readonly"
		}
		return "outside"
	}
	var ore *sandbox.OutsideRootError
	if errors.As(err, &ore) {
		if ore.Write {
			return "readonly"
		}
		return "outside"
	}
	if c := ops.ErrnoOf(err); c != "" {
		return string(c)
	}
	return err.Error()
}

type tcase struct {
	name, op, path string
	want           string // outcome
	result         string // the op's result, when set ($ placeholders)
	// after checks the tree once the call returned.
	after func(t *testing.T, tr tree)
	// differs says why sandbox.Confine gives another outcome (the case is
	// then run against the package only).
	differs string
}

func fileIs(p, want string) func(t *testing.T, tr tree) {
	return func(t *testing.T, tr tree) {
		t.Helper()
		b, err := os.ReadFile(tr.expand(p))
		if want == "" {
			if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s exists (%v)", p, err)
			}
			return
		}
		if err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", p, b, err, want)
		}
	}
}

func isLink(p string) func(t *testing.T, tr tree) {
	return func(t *testing.T, tr tree) {
		t.Helper()
		if fi, err := os.Lstat(tr.expand(p)); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("%s is no longer a link (%v)", p, err)
		}
	}
}

func cases() []tcase {
	return []tcase{
		// Inside.
		{name: "read file", op: "read", path: "$W/file.txt", want: "ok", result: "inside\n"},
		{name: "read abs link inside", op: "read", path: "$W/abs-in", want: "ok", result: "inside\n"},
		{name: "read rel link with dotdot", op: "read", path: "$W/rel-in", want: "ok", result: "inside\n"},
		{name: "read link to spill", op: "read", path: "$W/to-spill", want: "ok", result: "spilled\n"},
		{name: "read through link to spill dir", op: "read", path: "$W/to-spill-dir/spilled.txt", want: "ok", result: "spilled\n"},
		{name: "read link into read-only root", op: "read", path: "$W/to-ro", want: "ok", result: "ro\n"},
		{name: "read link up then file", op: "read", path: "$W/sub/up-file", want: "ok", result: "inside\n"},
		{name: "read link then dotdot", op: "read", path: "$W/through-link-dotdot", want: "ok", result: "inside\n"},
		{name: "read link from ro root into w", op: "read", path: "$R/to-w-sub/f.txt", want: "ok", result: "sub\n"},
		{name: "read dir", op: "read", path: "$W/sub", want: "EISDIR"},
		{name: "stat root", op: "stat", path: "$W", want: "ok", result: "dir w"},
		{name: "stat file", op: "stat", path: "$W/file.txt", want: "ok", result: "file file.txt"},
		{name: "stat dir link", op: "stat", path: "$W/to-spill-dir", want: "ok", result: "dir to-spill-dir"},
		{name: "stat missing", op: "stat", path: "$W/missing", want: "ENOENT"},
		{name: "stat missing parent", op: "stat", path: "$W/missing/x", want: "ENOENT"},
		{name: "stat file as dir", op: "stat", path: "$W/file.txt/x", want: "ENOTDIR"},
		{name: "stat link to file/.", op: "stat", path: "$W/file-dot", want: "ENOTDIR", differs: "sandbox.Confine refuses a link it cannot resolve as dangling; the kernel, like the package, says ENOTDIR"},
		{name: "read link to file/..", op: "read", path: "$W/file-dotdot", want: "ENOTDIR", differs: "sandbox.Confine refuses a link it cannot resolve as dangling; the kernel, like the package, says ENOTDIR"},
		{name: "stat loop", op: "stat", path: "$W/loop1", want: "ELOOP"},
		{name: "lstat loop", op: "lstat", path: "$W/loop1", want: "ok", result: "link"},
		{name: "readdir", op: "readdir", path: "$W/sub", want: "ok", result: "deep,f.txt,up,up-file"},
		{name: "readdir spill via link", op: "readdir", path: "$W/to-spill-dir", want: "ok", result: "spilled.txt"},
		{name: "readdir file", op: "readdir", path: "$W/file.txt", want: "ENOTDIR"},
		{name: "realpath link", op: "realpath", path: "$W/abs-in", want: "ok", result: "$W/file.txt"},
		{name: "realpath up", op: "realpath", path: "$W/sub/up", want: "ok", result: "$W"},
		{name: "realpath missing last", op: "realpath", path: "$W/sub/new", want: "ok", result: "$W/sub/new"},
		{name: "realpath dangling inside", op: "realpath", path: "$W/dangling-in", want: "ok", result: "$W/created-in.txt"},
		{name: "realpath missing parent", op: "realpath", path: "$W/missing/x", want: "ENOENT"},
		{name: "access read", op: "access-r", path: "$W/file.txt", want: "ok"},
		{name: "access read in ro root", op: "access-r", path: "$R/file", want: "ok"},
		{name: "access missing", op: "access-r", path: "$W/missing", want: "ENOENT"},

		// Writes inside.
		{name: "write new", op: "write", path: "$W/new.txt", want: "ok", after: fileIs("$W/new.txt", "written")},
		{name: "write existing", op: "write", path: "$W/file.txt", want: "ok", after: fileIs("$W/file.txt", "written")},
		{name: "write through abs link", op: "write", path: "$W/abs-in", want: "ok", after: func(t *testing.T, tr tree) {
			fileIs("$W/file.txt", "written")(t, tr)
			isLink("$W/abs-in")(t, tr)
		}},
		{name: "write through dangling link inside", op: "write", path: "$W/dangling-in", want: "ok", after: func(t *testing.T, tr tree) {
			fileIs("$W/created-in.txt", "written")(t, tr)
			isLink("$W/dangling-in")(t, tr)
		}},
		{name: "write into spill via link", op: "write", path: "$W/to-spill-dir/new", want: "ok", after: fileIs("$S/new", "written")},
		{name: "write missing parent", op: "write", path: "$W/missing/x", want: "ENOENT"},
		{name: "write dir", op: "write", path: "$W/sub", want: "EISDIR"},
		{name: "create", op: "create", path: "$W/c.txt", want: "ok", after: fileIs("$W/c.txt", "created")},
		{name: "create through dangling inside", op: "create", path: "$W/dangling-in", want: "ok", after: fileIs("$W/created-in.txt", "created")},
		{name: "create excl on dangling inside", op: "create-excl", path: "$W/dangling-in", want: "EEXIST", after: fileIs("$W/created-in.txt", "")},
		{name: "mkdirall", op: "mkdirall", path: "$W/a/b/c", want: "ok", after: func(t *testing.T, tr tree) {
			if fi, err := os.Stat(tr.W + "/a/b/c"); err != nil || !fi.IsDir() {
				t.Errorf("not made: %v", err)
			}
		}},
		{name: "mkdirall existing via link", op: "mkdirall", path: "$W/to-spill-dir", want: "ok"},
		{name: "mkdirall in spill via link", op: "mkdirall", path: "$W/to-spill-dir/n/m", want: "ok", after: func(t *testing.T, tr tree) {
			if _, err := os.Stat(tr.S + "/n/m"); err != nil {
				t.Error(err)
			}
		}},
		{name: "mkdirall on file", op: "mkdirall", path: "$W/file.txt", want: "ENOTDIR"},
		{name: "mkdirall below file", op: "mkdirall", path: "$W/file.txt/x", want: "ENOTDIR"},
		{name: "mkdirall dangling dir link", op: "mkdirall", path: "$W/dangling-dir-in", want: "EEXIST", after: fileIs("$W/missing-dir", "")},
		{name: "mkdirall below dangling dir link", op: "mkdirall", path: "$W/dangling-dir-in/x", want: "EEXIST", after: fileIs("$W/missing-dir", "")},
		{name: "remove file", op: "remove", path: "$W/file.txt", want: "ok", after: fileIs("$W/file.txt", "")},
		{name: "remove empty dir", op: "remove", path: "$W/a-missing", want: "ENOENT"},
		{name: "remove non-empty dir", op: "remove", path: "$W/sub", want: "ENOTEMPTY"},
		{name: "remove link to outside", op: "remove", path: "$W/link-victim", want: "ok", after: fileIs("$W/link-victim", "")},
		{name: "lstat link to outside", op: "lstat", path: "$W/link-file", want: "ok", result: "link"},
		{name: "remove root", op: "remove", path: "$W/empty/..", want: "EBUSY", differs: "sandbox.Confine lets the backend try to rmdir a root"},

		// Read-only roots.
		{name: "write in ro root", op: "write", path: "$R/file", want: "readonly", after: fileIs("$R/file", "ro\n")},
		{name: "write via link into ro root", op: "write", path: "$W/to-ro", want: "readonly", after: fileIs("$R/file", "ro\n")},
		{name: "create in ro root", op: "create", path: "$R/new", want: "readonly", after: fileIs("$R/new", "")},
		{name: "mkdirall in ro root", op: "mkdirall", path: "$W/to-ro-dir/new/x", want: "readonly"},
		{name: "remove in ro root", op: "remove", path: "$R/file", want: "readonly", after: fileIs("$R/file", "ro\n")},
		{name: "access write in ro root", op: "access-w", path: "$R/file", want: "readonly"},
		{name: "write nested ro root", op: "write", path: "$W/nested/n.txt", want: "readonly", after: fileIs("$W/nested/n.txt", "nested\n")},
		{name: "write link in ro root into w", op: "write", path: "$R/to-w-sub/f.txt", want: "ok", after: fileIs("$W/sub/f.txt", "written")},

		// Outside: .. and absolute paths.
		{name: "read dotdot", op: "read", path: "$W/../o/secret.txt", want: "outside"},
		{name: "read absolute", op: "read", path: "$O/secret.txt", want: "outside"},
		{name: "read beside", op: "read", path: "$B/beside.txt", want: "outside"},
		{name: "stat slash", op: "stat", path: "/", want: "outside"},
		{name: "stat parent of roots", op: "stat", path: "$B", want: "outside"},
		{name: "readdir parent of roots", op: "readdir", path: "$B", want: "outside"},
		{name: "read via proc root", op: "read", path: "/proc/self/root$O/secret.txt", want: "outside"},
		{name: "write absolute", op: "write", path: "$O/victim.txt", want: "outside"},
		{name: "write absolute new dir", op: "write", path: "$O/newdir/f.txt", want: "outside"},
		{name: "mkdirall outside", op: "mkdirall", path: "$O/newdir/x", want: "outside"},
		{name: "remove outside", op: "remove", path: "$O/victim.txt", want: "outside"},
		{name: "lstat outside", op: "lstat", path: "$O/secret.txt", want: "outside"},
		{name: "read link outside into w", op: "read", path: "$O/link-in", want: "ok", result: "inside\n"},
		{name: "realpath outside", op: "realpath", path: "$O/secret.txt", want: "outside"},
		{name: "access outside", op: "access-r", path: "$O/secret.txt", want: "outside"},

		// Outside: links.
		{name: "read absolute link", op: "read", path: "$W/link-file", want: "outside"},
		{name: "read relative link", op: "read", path: "$W/link-rel", want: "outside"},
		{name: "read chain", op: "read", path: "$W/chain1", want: "outside"},
		{name: "read through dir link", op: "read", path: "$W/link-dir/secret.txt", want: "outside"},
		{name: "read relative link in subdir", op: "read", path: "$W/sub/deep", want: "outside"},
		{name: "read dir link then dotdot", op: "read", path: "$W/link-dir/dir/../secret.txt", want: "outside"},
		{name: "read link up and out", op: "read", path: "$W/dotdot-out/secret.txt", want: "outside"},
		{name: "read proc root link", op: "read", path: "$W/proc-root/secret.txt", want: "outside"},
		{name: "read through dir link, missing", op: "read", path: "$W/link-dir/missing/x", want: "outside"},
		{name: "stat through link", op: "stat", path: "$W/link-file", want: "outside"},
		{name: "readdir dir link", op: "readdir", path: "$W/link-dir", want: "outside"},
		{name: "realpath link out", op: "realpath", path: "$W/link-file", want: "outside"},
		{name: "access link out", op: "access-r", path: "$W/link-file", want: "outside"},
		{name: "write through file link", op: "write", path: "$W/link-victim", want: "outside"},
		{name: "write through dangling link", op: "write", path: "$W/dangling", want: "outside"},
		{name: "write through deep dangling link", op: "write", path: "$W/dangling-deep", want: "outside"},
		{name: "write through dir link", op: "write", path: "$W/link-dir/new.txt", want: "outside"},
		{name: "write through dir link, new subdir", op: "write", path: "$W/link-dir/nd/f.txt", want: "outside"},
		{name: "write through chain", op: "write", path: "$W/chain1", want: "outside"},
		{name: "create through dangling link", op: "create", path: "$W/dangling", want: "outside"},
		{name: "create excl on dangling link", op: "create-excl", path: "$W/dangling", want: "EEXIST", differs: "O_EXCL never follows a final link, so the package does not look where it points (nothing is created either way)"},
		{name: "mkdirall through dir link", op: "mkdirall", path: "$W/link-dir/nd", want: "outside"},
		{name: "access write through link", op: "access-w", path: "$W/link-victim", want: "outside"},

		// Odd names.
		{name: "NUL byte", op: "read", path: "$W/file.txt\x00x", want: "EINVAL"},
		{name: "relative", op: "read", path: "file.txt", want: "EINVAL"},
	}
}

// TestTable runs every case against the package (with and without the
// openat2 shortcut) and against sandbox.Confine over the local backend.
// Cases that only look share one tree per leg; the others get their own.
func TestTable(t *testing.T) {
	openSet := func(t *testing.T, tr tree) fsys {
		s, err := beneath.Open(tr.roots())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return setFS{s}
	}
	legs := []struct {
		name    string
		noFast  bool
		confine bool
		open    func(t *testing.T, tr tree) fsys
	}{
		{"beneath", false, false, openSet},
		{"beneath-no-openat2", true, false, openSet},
		{"confine", false, true, func(t *testing.T, tr tree) fsys {
			lb, err := local.New(context.Background(), local.Config{WorkDir: tr.W, NoHelper: true})
			if err != nil {
				t.Fatal(err)
			}
			var rs []sandbox.Root
			for _, r := range tr.roots() {
				rs = append(rs, sandbox.Root{Path: r.Path, ReadOnly: r.ReadOnly})
			}
			cb, err := sandbox.Confine(context.Background(), lb, rs)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cb.Close() })
			return confineFS{cb}
		}},
	}
	for _, leg := range legs {
		t.Run(leg.name, func(t *testing.T) {
			withoutOpenat2(t, leg.noFast)
			shared := newTree(t)
			sharedFS := leg.open(t, shared)
			for _, tc := range cases() {
				t.Run(tc.name, func(t *testing.T) {
					if leg.confine && tc.differs != "" {
						t.Skip(tc.differs)
					}
					switch tc.op {
					case "read", "stat", "lstat", "readdir", "realpath", "access-r", "access-w":
						check(t, shared, tc, sharedFS)
					default:
						tr := newTree(t)
						check(t, tr, tc, leg.open(t, tr))
					}
				})
			}
		})
	}
}

func check(t *testing.T, tr tree, tc tcase, f fsys) {
	t.Helper()
	before := tr.snapshot(t)
	got, err := f.run(tc.op, tr.expand(tc.path))
	if o := outcome(err); o != tc.want {
		t.Errorf("%s %s: %s (%v), want %s", tc.op, tc.path, o, err, tc.want)
	}
	if strings.Contains(got, secret) || err != nil && strings.Contains(err.Error(), secret) {
		t.Errorf("the result shows the outside: %q, %v", got, err)
	}
	if err == nil && tc.result != "" && got != tr.expand(tc.result) {
		t.Errorf("result %q, want %q", got, tr.expand(tc.result))
	}
	if tc.after != nil {
		tc.after(t, tr)
	}
	if after := tr.snapshot(t); after != before {
		t.Errorf("the outside changed:\n%s\n---\n%s", before, after)
	}
	// No temp file is left behind.
	filepath.WalkDir(tr.B, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".pi-tmp-") {
			t.Errorf("temp file left: %s", p)
		}
		return nil
	})
}

// withoutOpenat2 turns the openat2 shortcut off for t when off is set, so
// the element-by-element walk is tested on every case too.
func withoutOpenat2(t testing.TB, off bool) {
	if !off {
		return
	}
	old := beneath.NoOpenat2.Swap(true)
	t.Cleanup(func() { beneath.NoOpenat2.Store(old) })
}
