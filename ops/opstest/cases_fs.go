package opstest

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/internal/shquote"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

func fsCases() []testCase {
	return []testCase{
		{name: "Open/NotExist", fn: notExist("Open", func(ctx context.Context, b ops.Backend, n string) error {
			r, err := b.Open(ctx, n)
			if err == nil {
				r.Close()
			}
			return err
		})},
		{name: "Stat/NotExist", fn: notExist("Stat", func(ctx context.Context, b ops.Backend, n string) error {
			_, err := b.Stat(ctx, n)
			return err
		})},
		{name: "Lstat/NotExist", fn: notExist("Lstat", func(ctx context.Context, b ops.Backend, n string) error {
			_, err := b.Lstat(ctx, n)
			return err
		})},
		{name: "ReadDir/NotExist", fn: notExist("ReadDir", func(ctx context.Context, b ops.Backend, n string) error {
			_, err := b.ReadDir(ctx, n)
			return err
		})},
		{name: "Access/NotExist", fn: notExist("Access", func(ctx context.Context, b ops.Backend, n string) error {
			return b.Access(ctx, n, ops.AccessRead)
		})},
		{name: "Remove/NotExist", fn: notExist("Remove", func(ctx context.Context, b ops.Backend, n string) error {
			return b.Remove(ctx, n)
		})},
		{name: "RealPath/MissingParent", fn: notExist("RealPath", func(ctx context.Context, b ops.Backend, n string) error {
			_, err := b.RealPath(ctx, n+"/child")
			return err
		})},
		{name: "OpenWriter/MissingParent", fn: notExist("OpenWriter", func(ctx context.Context, b ops.Backend, n string) error {
			w, err := b.OpenWriter(ctx, n+"/child", os.O_CREATE|os.O_TRUNC, 0o644)
			if err == nil {
				w.Close()
			}
			return err
		})},
		{name: "WriteFile/MissingParent", fn: notExist("WriteFile", func(ctx context.Context, b ops.Backend, n string) error {
			return b.WriteFile(ctx, n+"/child", []byte("x"), 0o644)
		})},
		{name: "Open/Directory", fn: testOpenDirectory},
		{name: "Open/FileAsDirectory", fn: testFileAsDirectory("Open")},
		{name: "Stat/FileAsDirectory", fn: testFileAsDirectory("Stat")},
		{name: "ReadDir/OnFile", fn: testFileAsDirectory("ReadDir")},
		{name: "RealPath/FileAsDirectory", fn: testFileAsDirectory("RealPath")},
		{name: "MkdirAll/UnderFile", fn: testFileAsDirectory("MkdirAll")},
		{name: "MkdirAll/OnFile", fn: testMkdirAllOnFile},
		{name: "MkdirAll/Idempotent", fn: testMkdirAllIdempotent},
		{name: "Stat/File", fn: testStatFile},
		{name: "Stat/Directory", fn: testStatDirectory},
		{name: "Stat/FollowsSymlink", fn: testStatSymlink},
		{name: "Lstat/Symlink", fn: testLstatSymlink},
		{name: "Stat/DanglingSymlink", fn: testDanglingSymlink},
		{name: "ReadDir/SortedWithTypes", fn: testReadDirSorted},
		{name: "ReadDir/Empty", fn: testReadDirEmpty},
		{name: "RealPath/SymlinkChain", fn: testRealPathChain},
		{name: "RealPath/MissingLast", fn: testRealPathMissingLast},
		{name: "Access/ReadOnlyFile", fn: testAccessReadOnly},
		{name: "Access/ExecMatchesShell", fn: testAccessExec},
		{name: "Open/Unreadable", fn: testOpenUnreadable},
		{name: "Open/SymlinkLoop", fn: testSymlinkLoop},
		{name: "Stat/NameTooLong", fn: testNameTooLong},
		{name: "Remove/FileAndEmptyDir", fn: testRemove},
		{name: "Remove/NonEmptyDir", fn: testRemoveNonEmpty},
		{name: "CountLines/MatchesFallback", fn: testCountLines},
		{name: "CountLines/NotExist", fn: testCountLinesNotExist},
		{name: "Info/Sane", fn: testInfo},
	}
}

// notExist checks that call on a missing name fails with ENOENT as a
// *fs.PathError naming the path (the parent for the "…/child" calls).
func notExist(what string, call func(ctx context.Context, b ops.Backend, name string) error) caseFunc {
	return func(t testing.TB, ctx context.Context, b ops.Backend) {
		dir := scratch(t, ctx, b)
		name := dir + "/missing"
		err := call(ctx, b, name)
		wantPathErr(t, what, err, "", ops.ENOENT)
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: errors.Is(err, fs.ErrNotExist) = false for %v", what, err)
		}
	}
}

func testOpenDirectory(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	r, err := b.Open(ctx, dir)
	if err == nil {
		r.Close()
	}
	wantPathErr(t, "Open(dir)", err, dir, ops.EISDIR)
}

func testFileAsDirectory(what string) caseFunc {
	return func(t testing.TB, ctx context.Context, b ops.Backend) {
		dir := scratch(t, ctx, b)
		file := dir + "/file"
		writeFile(t, ctx, b, file, "x")
		name := file + "/x"
		var err error
		switch what {
		case "Open":
			var r interface{ Close() error }
			if r, err = b.Open(ctx, name); err == nil {
				r.Close()
			}
		case "Stat":
			_, err = b.Stat(ctx, name)
		case "ReadDir":
			name = file
			_, err = b.ReadDir(ctx, name)
		case "RealPath":
			_, err = b.RealPath(ctx, name)
		case "MkdirAll":
			name = file + "/a/b"
			err = b.MkdirAll(ctx, name, 0o755)
		}
		wantPathErr(t, what, err, "", ops.ENOTDIR)
	}
}

func testMkdirAllOnFile(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	file := dir + "/file"
	writeFile(t, ctx, b, file, "x")
	err := b.MkdirAll(ctx, file, 0o755)
	if c := ops.ErrnoOf(err); c != ops.ENOTDIR && c != ops.EEXIST {
		t.Fatalf("MkdirAll(file) = %v (errno %q), want ENOTDIR or EEXIST", err, c)
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		t.Fatalf("MkdirAll(file): %T is not a *fs.PathError", err)
	}
}

func testMkdirAllIdempotent(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	name := dir + "/a/b/c"
	for i := range 2 {
		if err := b.MkdirAll(ctx, name, 0o755); err != nil {
			t.Fatalf("MkdirAll #%d: %v", i+1, err)
		}
	}
	if err := b.MkdirAll(ctx, dir+"/a", 0o755); err != nil {
		t.Fatalf("MkdirAll(existing parent): %v", err)
	}
	fi, err := b.Stat(ctx, name)
	if err != nil || !fi.IsDir() {
		t.Fatalf("Stat after MkdirAll: %v, %v", fi, err)
	}
}

func testStatFile(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	writeFile(t, ctx, b, dir+"/f.txt", "hello")
	fi, err := b.Stat(ctx, dir+"/f.txt")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Name() != "f.txt" || fi.Size() != 5 || !fi.Mode().IsRegular() || fi.IsDir() || fi.ModTime().IsZero() {
		t.Fatalf("Stat = name %q size %d mode %v dir %v mtime %v; want f.txt, 5, regular", fi.Name(), fi.Size(), fi.Mode(), fi.IsDir(), fi.ModTime())
	}
}

func testStatDirectory(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	fi, err := b.Stat(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.IsDir() || !fi.Mode().IsDir() || fi.Name() != path.Base(dir) {
		t.Fatalf("Stat(dir) = name %q mode %v", fi.Name(), fi.Mode())
	}
}

func testStatSymlink(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	writeFile(t, ctx, b, dir+"/f.txt", "hello")
	sh(t, ctx, b, dir, "ln -s f.txt link")
	fi, err := b.Stat(ctx, dir+"/link")
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || fi.Size() != 5 {
		t.Fatalf("Stat(link) = mode %v size %d, want the regular 5-byte target", fi.Mode(), fi.Size())
	}
}

func testLstatSymlink(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	writeFile(t, ctx, b, dir+"/f.txt", "hello")
	sh(t, ctx, b, dir, "ln -s f.txt link")
	fi, err := b.Lstat(ctx, dir+"/link")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&fs.ModeSymlink == 0 || fi.Name() != "link" {
		t.Fatalf("Lstat(link) = name %q mode %v, want a symlink named link", fi.Name(), fi.Mode())
	}
	fi, err = b.Lstat(ctx, dir+"/f.txt")
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("Lstat(file) = %v, %v; want regular", fi, err)
	}
}

func testDanglingSymlink(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	sh(t, ctx, b, dir, "ln -s nowhere link")
	_, err := b.Stat(ctx, dir+"/link")
	wantPathErr(t, "Stat(dangling)", err, dir+"/link", ops.ENOENT)
	fi, err := b.Lstat(ctx, dir+"/link")
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("Lstat(dangling) = %v, %v; want a symlink", fi, err)
	}
}

func testReadDirSorted(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	sh(t, ctx, b, dir, "mkdir d && cd d && echo 1 > b && echo 2 > a && echo 3 > C && mkdir z && ln -s a l && echo 4 > .h")
	es, err := b.ReadDir(ctx, dir+"/d")
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name string
		typ  fs.FileMode
	}{{".h", 0}, {"C", 0}, {"a", 0}, {"b", 0}, {"l", fs.ModeSymlink}, {"z", fs.ModeDir}}
	if len(es) != len(want) {
		t.Fatalf("ReadDir: %d entries %v, want %d", len(es), names(es), len(want))
	}
	for i, w := range want {
		if es[i].Name() != w.name || es[i].Type() != w.typ || es[i].IsDir() != (w.typ == fs.ModeDir) {
			t.Fatalf("ReadDir[%d] = %q type %v, want %q type %v (all: %v)", i, es[i].Name(), es[i].Type(), w.name, w.typ, names(es))
		}
	}
	fi, err := es[2].Info()
	if err != nil || fi.Size() != 2 {
		t.Fatalf("entry a: Info() = %v, %v; want size 2", fi, err)
	}
}

func names(es []fs.DirEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func testReadDirEmpty(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	es, err := b.ReadDir(ctx, dir)
	if err != nil || len(es) != 0 {
		t.Fatalf("ReadDir(empty) = %v, %v", names(es), err)
	}
}

func testRealPathChain(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	sh(t, ctx, b, dir, "mkdir -p real/sub && echo x > real/sub/f && ln -s real l1 && ln -s l1 l2 && ln -s "+shquote.Quote(dir)+"/l2/sub abs && ln -s ../l2 real/up")
	base, err := b.RealPath(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		dir + "/l2/sub/f":      base + "/real/sub/f",
		dir + "/abs/f":         base + "/real/sub/f",
		dir + "/real/up/sub":   base + "/real/sub",
		dir + "/l2":            base + "/real",
		dir + "/real/sub/f":    base + "/real/sub/f",
		dir + "/l1/sub/../sub": base + "/real/sub",
	} {
		got, err := b.RealPath(ctx, path.Clean(in))
		if err != nil || got != want {
			t.Errorf("RealPath(%s) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func testRealPathMissingLast(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	sh(t, ctx, b, dir, "mkdir real && ln -s real link")
	base, err := b.RealPath(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.RealPath(ctx, dir+"/link/new.txt")
	if want := base + "/real/new.txt"; err != nil || got != want {
		t.Fatalf("RealPath(link/new.txt) = %q, %v; want %q", got, err, want)
	}
}

func testAccessReadOnly(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	name := dir + "/ro.txt"
	if err := b.WriteFile(ctx, name, []byte("x"), 0o444); err != nil {
		t.Fatal(err)
	}
	sh(t, ctx, b, dir, "chmod 0444 ro.txt")
	if err := b.Access(ctx, name, ops.AccessRead); err != nil {
		t.Fatalf("Access(read) on 0444: %v", err)
	}
	if err := b.Access(ctx, name, ops.AccessExists); err != nil {
		t.Fatalf("Access(exists): %v", err)
	}
	// root may write anyway: the shell's own test -w is the reference.
	writable := sh(t, ctx, b, dir, "if test -w ro.txt; then echo yes; else echo no; fi") == "yes\n"
	err := b.Access(ctx, name, ops.AccessWrite)
	switch {
	case writable && err != nil:
		t.Fatalf("Access(write) = %v, but test -w says writable", err)
	case !writable:
		wantPathErr(t, "Access(write) on 0444", err, name, ops.EACCES)
	}
}

func testAccessExec(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	sh(t, ctx, b, dir, "echo x > plain && chmod 0644 plain && echo x > tool && chmod 0755 tool")
	for _, f := range []string{"plain", "tool"} {
		exec := sh(t, ctx, b, dir, "if test -x "+f+"; then echo yes; else echo no; fi") == "yes\n"
		err := b.Access(ctx, dir+"/"+f, ops.AccessExec)
		if exec != (err == nil) {
			t.Errorf("Access(%s, exec) = %v, test -x says %v", f, err, exec)
		}
		if !exec {
			wantPathErr(t, "Access(exec)", err, dir+"/"+f, ops.EACCES)
		}
	}
}

func testRemove(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	writeFile(t, ctx, b, dir+"/f", "x")
	if err := b.MkdirAll(ctx, dir+"/d", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{dir + "/f", dir + "/d"} {
		if err := b.Remove(ctx, n); err != nil {
			t.Fatalf("Remove(%s): %v", n, err)
		}
		if _, err := b.Lstat(ctx, n); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Lstat after Remove(%s) = %v, want not exist", n, err)
		}
	}
}

func testRemoveNonEmpty(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	writeFile(t, ctx, b, dir+"/f", "x")
	err := b.Remove(ctx, dir)
	var pe *fs.PathError
	if !errors.As(err, &pe) || !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Remove(non-empty dir) = %v (%T), want a PathError matching fs.ErrExist (ENOTEMPTY)", err, err)
	}
	if _, err := b.Stat(ctx, dir+"/f"); err != nil {
		t.Fatalf("file gone after a failed Remove: %v", err)
	}
}

func testCountLines(t testing.TB, ctx context.Context, b ops.Backend) {
	if _, ok := b.(ops.LineCountFS); !ok {
		t.Skip("backend does not implement ops.LineCountFS")
	}
	dir := scratch(t, ctx, b)
	files := map[string]string{"empty": "", "one": "x", "two": "a\nb\nc", "crlf": "a\r\nb\r\n"}
	big := make([]byte, 0, 1<<20)
	for len(big) < 1<<20-40 {
		big = append(big, "line of text, not too short\n"...)
	}
	files["big"] = string(big)
	for n, data := range files {
		writeFile(t, ctx, b, dir+"/"+n, data)
		nl, size, err := ops.CountLines(ctx, b, dir+"/"+n)
		fnl, fsize, ferr := ops.CountLines(ctx, struct{ ops.FS }{b}, dir+"/"+n)
		if err != nil || ferr != nil || nl != fnl || size != fsize || size != int64(len(data)) {
			t.Errorf("%s: CountLines = %d, %d, %v; fallback %d, %d, %v; size %d", n, nl, size, err, fnl, fsize, ferr, len(data))
		}
	}
}

func testCountLinesNotExist(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	_, _, err := ops.CountLines(ctx, b, dir+"/missing")
	wantPathErr(t, "CountLines", err, "", ops.ENOENT)
	_, _, err = ops.CountLines(ctx, b, dir)
	wantPathErr(t, "CountLines(dir)", err, "", ops.EISDIR)
}

func testInfo(t testing.TB, ctx context.Context, b ops.Backend) {
	i := b.Info()
	for what, p := range map[string]string{"WorkDir": i.WorkDir, "Home": i.Home, "Shell": i.Shell, "SpillDir": i.SpillDir} {
		if !path.IsAbs(p) || path.Clean(p) != p {
			t.Errorf("Info.%s = %q, want an absolute clean path", what, p)
		}
	}
	if i.Backend == "" || i.OS == "" || i.Arch == "" {
		t.Errorf("Info = %+v: Backend, OS and Arch must be set", i)
	}
	fi, err := b.Stat(ctx, i.SpillDir)
	if err != nil || !fi.IsDir() {
		t.Fatalf("Stat(SpillDir) = %v, %v", fi, err)
	}
	if err := b.Access(ctx, i.SpillDir, ops.AccessWrite); err != nil {
		t.Errorf("SpillDir not writable: %v", err)
	}
	if out := sh(t, ctx, b, "", "test -x "+shquote.Quote(i.Shell)+" && echo ok"); out != "ok\n" {
		t.Errorf("Info.Shell %s is not executable in the target: %q", i.Shell, out)
	}
	id := sh(t, ctx, b, "", "id -u")
	if i.UID >= 0 && id != strconv.Itoa(i.UID)+"\n" {
		t.Errorf("Info.UID = %d, id -u says %q", i.UID, id)
	}
	if i.Has("no-such-capability") {
		t.Errorf("Info.Has reports an unknown capability")
	}
}

// testOpenUnreadable: a mode-0000 file is EACCES for a non-root user (the
// shell's test -r is the reference: root may read it).
func testOpenUnreadable(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	sh(t, ctx, b, dir, "echo secret > f && chmod 0000 f")
	readable := sh(t, ctx, b, dir, "if test -r f; then echo yes; else echo no; fi") == "yes\n"
	r, err := b.Open(ctx, dir+"/f")
	if err == nil {
		data, rerr := io.ReadAll(r)
		r.Close()
		if !readable {
			t.Fatalf("Open of an unreadable file succeeded (read %q, %v), want EACCES", data, rerr)
		}
		return
	}
	if readable {
		t.Fatalf("Open = %v, but test -r says readable", err)
	}
	wantPathErr(t, "Open(0000 file)", err, dir+"/f", ops.EACCES)
	if err := b.Access(ctx, dir+"/f", ops.AccessRead); ops.ErrnoOf(err) != ops.EACCES {
		t.Errorf("Access(read) = %v, want EACCES", err)
	}
	if fi, err := b.Stat(ctx, dir+"/f"); err != nil || fi.Mode().Perm() != 0 {
		t.Errorf("Stat = %v, %v; want mode 0000", fi, err)
	}
}

func testSymlinkLoop(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	sh(t, ctx, b, dir, "ln -s a b && ln -s b a")
	r, err := b.Open(ctx, dir+"/a")
	if err == nil {
		r.Close()
	}
	wantPathErr(t, "Open(symlink loop)", err, dir+"/a", ops.ELOOP)
	_, err = b.Stat(ctx, dir+"/a")
	wantPathErr(t, "Stat(symlink loop)", err, dir+"/a", ops.ELOOP)
	_, err = b.RealPath(ctx, dir+"/a")
	wantPathErr(t, "RealPath(symlink loop)", err, "", ops.ELOOP)
}

func testNameTooLong(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	name := dir + "/" + strings.Repeat("n", 300)
	_, err := b.Stat(ctx, name)
	wantPathErr(t, "Stat(300-byte name)", err, name, ops.ENAMETOOLONG)
	err = b.WriteFile(ctx, name, []byte("x"), 0o644)
	wantPathErr(t, "WriteFile(300-byte name)", err, "", ops.ENAMETOOLONG)
}
