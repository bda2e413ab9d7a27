package opstest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

func writeCases() []testCase {
	return []testCase{
		{name: "WriteFile/AllByteValues", fn: testAllBytes},
		{name: "WriteFile/Empty", fn: testWriteEmpty},
		{name: "WriteFile/Large32MiB", fn: testLarge, timeout: 5 * time.Minute},
		{name: "WriteFile/KeepsModeOnOverwrite", fn: testKeepsMode},
		{name: "WriteFile/NewFileMode", fn: testNewFileMode},
		{name: "WriteFile/ThroughSymlink", fn: testWriteThroughSymlink},
		{name: "WriteFile/DanglingSymlink", fn: testWriteDanglingSymlink},
		{name: "WriteFile/OnDirectory", fn: testWriteOnDirectory},
		{name: "WriteFile/ReadOnlyFile", fn: testWriteReadOnly},
		{name: "WriteFile/ReadOnlyDirectory", fn: testWriteReadOnlyDir},
		{name: "WriteFile/NoTempLeft", fn: testNoTempLeft},
		{name: "WriteFile/Atomic", fn: testAtomic, timeout: 5 * time.Minute},
		{name: "OpenWriter/Stream64MiB", fn: testStream, timeout: 5 * time.Minute},
		{name: "OpenWriter/ExclExisting", fn: testExcl},
		{name: "OpenWriter/Append", fn: testAppend},
	}
}

func testAllBytes(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	var data []byte
	for range 3 {
		for i := range 256 {
			data = append(data, byte(i))
		}
	}
	data = append(data, "\r\n\x00\xff\xfe"...)
	if err := b.WriteFile(ctx, dir+"/bin", data, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, ctx, b, dir+"/bin"); !bytes.Equal(got, data) {
		t.Fatalf("round trip of all byte values differs: got %d bytes, want %d", len(got), len(data))
	}
	// The shell sees the same bytes (no newline or encoding translation).
	if got := sh(t, ctx, b, dir, "wc -c < bin"); strings.TrimSpace(got) != "773" {
		t.Fatalf("wc -c = %q, want 773", got)
	}
}

func testWriteEmpty(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	writeFile(t, ctx, b, dir+"/f", "not empty")
	writeFile(t, ctx, b, dir+"/f", "")
	if got := readAll(t, ctx, b, dir+"/f"); len(got) != 0 {
		t.Fatalf("read %q after writing nothing", got)
	}
	if fi, err := b.Stat(ctx, dir+"/f"); err != nil || fi.Size() != 0 {
		t.Fatalf("Stat = %v, %v; want size 0", fi, err)
	}
}

func randomBytes(n int, seed uint64) []byte {
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), 42})
	data := make([]byte, n)
	_, _ = r.Read(data)
	return data
}

func testLarge(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	data := randomBytes(32<<20, 1)
	if err := b.WriteFile(ctx, dir+"/big", data, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := b.Open(ctx, dir+"/big")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		t.Fatal(err)
	}
	if want := sha256.Sum256(data); n != int64(len(data)) || !bytes.Equal(h.Sum(nil), want[:]) {
		t.Fatalf("read back %d bytes with a different hash (wrote %d)", n, len(data))
	}
}

func testKeepsMode(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	writeFile(t, ctx, b, dir+"/run.sh", "old")
	sh(t, ctx, b, dir, "chmod 0751 run.sh")
	if err := b.WriteFile(ctx, dir+"/run.sh", []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := b.Stat(ctx, dir+"/run.sh")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o751 {
		t.Fatalf("mode after overwrite = %v, want -rwxr-x--x (kept)", fi.Mode())
	}
	if got := readAll(t, ctx, b, dir+"/run.sh"); string(got) != "new" {
		t.Fatalf("content %q, want new", got)
	}
}

func testNewFileMode(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	// A backend may apply the target's umask (as pi's fs.writeFile does) or
	// not; either is accepted.
	um, err := strconv.ParseUint(strings.TrimSpace(sh(t, ctx, b, dir, "umask")), 8, 32)
	if err != nil {
		t.Fatalf("umask: %v", err)
	}
	for name, perm := range map[string]fs.FileMode{"a": 0o640, "b": 0o600, "c": 0o750} {
		if err := b.WriteFile(ctx, dir+"/"+name, []byte("x"), perm); err != nil {
			t.Fatal(err)
		}
		fi, err := b.Stat(ctx, dir+"/"+name)
		if err != nil || (fi.Mode().Perm() != perm && fi.Mode().Perm() != perm&^fs.FileMode(um)) {
			t.Errorf("new file %s: mode %v, %v; want %v (umask %03o)", name, fi.Mode(), err, perm, um)
		}
	}
	if uid := b.Info().UID; uid >= 0 {
		if got := sh(t, ctx, b, dir, "ls -ln a | awk '{print $3}'"); strings.TrimSpace(got) != strconvItoa(uid) {
			t.Errorf("new file owner %q, want the target user %d", got, uid)
		}
	}
}

func testWriteThroughSymlink(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	writeFile(t, ctx, b, dir+"/target.txt", "old")
	sh(t, ctx, b, dir, "mkdir sub && ln -s ../target.txt sub/link && ln -s sub/link link2")
	if err := b.WriteFile(ctx, dir+"/link2", []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, ctx, b, dir+"/target.txt"); string(got) != "new" {
		t.Fatalf("target content %q, want new", got)
	}
	for _, l := range []string{"/link2", "/sub/link"} {
		if fi, err := b.Lstat(ctx, dir+l); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Fatalf("%s is no longer a symlink: %v, %v", l, fi, err)
		}
	}
}

func testWriteDanglingSymlink(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	sh(t, ctx, b, dir, "ln -s new.txt link")
	if err := b.WriteFile(ctx, dir+"/link", []byte("made"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, ctx, b, dir+"/new.txt"); string(got) != "made" {
		t.Fatalf("link target content %q, want made (pi writes through the link)", got)
	}
	if fi, err := b.Lstat(ctx, dir+"/link"); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("link replaced: %v, %v", fi, err)
	}
}

func testWriteOnDirectory(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	if err := b.MkdirAll(ctx, dir+"/d", 0o755); err != nil {
		t.Fatal(err)
	}
	err := b.WriteFile(ctx, dir+"/d", []byte("x"), 0o644)
	wantPathErr(t, "WriteFile(dir)", err, "", ops.EISDIR)
}

func testNoTempLeft(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	for i := range 3 {
		writeFile(t, ctx, b, dir+"/f", strings.Repeat("x", i))
	}
	es, err := b.ReadDir(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].Name() != "f" {
		t.Fatalf("directory holds %v after writes, want only f", names(es))
	}
}

// testAtomic rewrites a 2 MiB file 30 times with two alternating contents
// while readers check that every read is one complete content. 2 MiB is
// dozens of a transfer's chunks (32 to 64 KiB): a write seen before its end shows.
func testAtomic(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	name := dir + "/atomic"
	contents := [2][]byte{bytes.Repeat([]byte{'a'}, 2<<20), bytes.Repeat([]byte{'b'}, 2<<20)}
	if err := b.WriteFile(ctx, name, contents[0], 0o644); err != nil {
		t.Fatal(err)
	}
	var (
		done  atomic.Bool
		reads atomic.Int64
		bad   atomic.Value
		wg    sync.WaitGroup
	)
	for range 2 {
		wg.Go(func() {
			for !done.Load() && ctx.Err() == nil {
				got, err := ops.ReadFile(ctx, b, name)
				if err != nil {
					bad.CompareAndSwap(nil, "read: "+err.Error())
					return
				}
				reads.Add(1)
				if !bytes.Equal(got, contents[0]) && !bytes.Equal(got, contents[1]) {
					bad.CompareAndSwap(nil, describeMix(got))
					return
				}
			}
		})
	}
	var werr error
	const writes = 30
	for i := range writes {
		if werr = b.WriteFile(ctx, name, contents[(i+1)%2], 0o644); werr != nil {
			break
		}
	}
	done.Store(true)
	wg.Wait()
	if werr != nil {
		t.Fatalf("WriteFile: %v", werr)
	}
	if v := bad.Load(); v != nil {
		t.Fatalf("a reader saw a mixed or partial content: %s", v)
	}
	if reads.Load() == 0 {
		t.Fatalf("no read completed while writing")
	}
	t.Logf("%d complete reads during %d writes", reads.Load(), writes)
}

func describeMix(got []byte) string {
	return "len " + strconvItoa(len(got)) + ", " + strconvItoa(bytes.Count(got, []byte{'a'})) + " a, " + strconvItoa(bytes.Count(got, []byte{'b'})) + " b"
}

func testStream(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	name := dir + "/stream"
	w, err := b.OpenWriter(ctx, name, os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	chunk := randomBytes(1<<20, 2)
	for i := range 64 {
		chunk[0] = byte(i) // every chunk differs
		h.Write(chunk)
		if _, err := w.Write(chunk); err != nil {
			w.Close()
			t.Fatalf("Write #%d: %v", i, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	fi, err := b.Stat(ctx, name)
	if err != nil || fi.Size() != 64<<20 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("Stat = %v, %v; want 64 MiB, mode 0600", fi, err)
	}
	r, err := b.Open(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h2 := sha256.New()
	if _, err := io.Copy(h2, r); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(h.Sum(nil), h2.Sum(nil)) {
		t.Fatalf("streamed content differs when read back")
	}
}

func testExcl(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	writeFile(t, ctx, b, dir+"/f", "keep")
	w, err := b.OpenWriter(ctx, dir+"/f", os.O_CREATE|os.O_EXCL, 0o644)
	if err == nil {
		w.Close()
	}
	wantPathErr(t, "OpenWriter(O_EXCL, existing)", err, dir+"/f", ops.EEXIST)
	if got := readAll(t, ctx, b, dir+"/f"); string(got) != "keep" {
		t.Fatalf("content %q after a failed exclusive open", got)
	}
	w, err = b.OpenWriter(ctx, dir+"/g", os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatalf("OpenWriter(O_EXCL, new): %v", err)
	}
	if _, err := w.Write([]byte("g")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func testAppend(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	writeFile(t, ctx, b, dir+"/f", "one\n")
	w, err := b.OpenWriter(ctx, dir+"/f", os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("two\n")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, ctx, b, dir+"/f"); string(got) != "one\ntwo\n" {
		t.Fatalf("content %q, want one, two", got)
	}
}

// testWriteReadOnly: an atomic rename could replace a file the user may not
// write; pi's in-place write fails with EACCES there (root may write).
func testWriteReadOnly(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	writeFile(t, ctx, b, dir+"/ro", "old")
	sh(t, ctx, b, dir, "chmod 0444 ro")
	writable := sh(t, ctx, b, dir, "if test -w ro; then echo yes; else echo no; fi") == "yes\n"
	err := b.WriteFile(ctx, dir+"/ro", []byte("new"), 0o644)
	got := string(readAll(t, ctx, b, dir+"/ro"))
	if writable {
		if err != nil || got != "new" {
			t.Fatalf("WriteFile on a 0444 file the user may write (test -w): %v, content %q", err, got)
		}
		return
	}
	// A backend that renames a temp file over the target must check write
	// access first (access(2) W_OK, or `test -w`), or it silently replaces
	// a read-only file where pi's write fails.
	wantPathErr(t, "WriteFile on a 0444 file the user may not write (pi: EACCES; check write access before the rename)", err, dir+"/ro", ops.EACCES)
	if got != "old" {
		t.Fatalf("content %q after a refused write, want old", got)
	}
}

// testWriteReadOnlyDir: a writable file in a directory the user may not
// write: no temp file can be made there, but pi's in-place write works, so
// the backend falls back to writing in place.
func testWriteReadOnlyDir(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	sh(t, ctx, b, dir, "mkdir d && echo old > d/f && chmod 0644 d/f && chmod 0555 d")
	if err := b.WriteFile(ctx, dir+"/d/f", []byte("new"), 0o644); err != nil {
		t.Fatalf("WriteFile of a writable file in a read-only directory: %v (pi writes in place)", err)
	}
	if got := string(readAll(t, ctx, b, dir+"/d/f")); got != "new" {
		t.Fatalf("content %q, want new", got)
	}
	if es, err := b.ReadDir(ctx, dir+"/d"); err != nil || len(es) != 1 {
		t.Fatalf("directory holds %v, %v; want only f", names(es), err)
	}
}
