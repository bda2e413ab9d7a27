package checkpoint

import (
	"archive/tar"
	"bytes"
	"errors"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/checkpoint/treetest"
)

// TestExportImportProperty: over random trees, export from one store,
// import into another and restore there gives the tree bit for bit; the
// tar stays within exportBound, and tar(1) lists it.
func TestExportImportProperty(t *testing.T) {
	defer func(d bool) { durable = d }(durable)
	durable = false
	n := 200
	if testing.Short() {
		n = 40
	}
	src, dst := openStore(t), openStore(t)
	tmp := t.TempDir()
	a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	os.Mkdir(a, 0o755)
	os.Mkdir(b, 0o755)
	r := rand.New(rand.NewSource(7))
	for i := 0; i < n; i++ {
		tree := treetest.Rand(r)
		treetest.Clear(t, a)
		treetest.Materialize(t, a, tree)
		want := treetest.Snapshot(t, a)
		cp := mustCreate(t, src, a, Options{Name: "n"})
		var buf bytes.Buffer
		var bound int64
		if _, err := src.Export(&buf, cp.ID, func(_ Checkpoint, n int64) { bound = n }); err != nil {
			t.Fatal(err)
		}
		if int64(buf.Len()) > bound {
			t.Fatalf("tree %d: the tar is %d bytes, over its bound %d", i, buf.Len(), bound)
		}
		if i == 0 {
			if _, err := exec.LookPath("tar"); err == nil {
				cmd := exec.Command("tar", "-tf", "-")
				cmd.Stdin = bytes.NewReader(buf.Bytes())
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("tar -t: %v\n%s", err, out)
				}
			}
		}
		got, err := dst.Import(&buf, "")
		if err != nil {
			t.Fatalf("tree %d: import: %v", i, err)
		}
		if got.Name != "n" || got.Files != cp.Files {
			t.Fatalf("tree %d: imported %+v, exported %+v", i, got, cp.Checkpoint)
		}
		treetest.Clear(t, b)
		if _, _, err := dst.Restore(b, got.ID); err != nil {
			t.Fatalf("tree %d: restore: %v", i, err)
		}
		if s := treetest.Snapshot(t, b); s != want {
			t.Fatalf("tree %d: imported and restored\n%s\nwant\n%s", i, s, want)
		}
	}
}

// tarOf builds an archive: the export's root entry when ours, then hs
// (a file's body is its Linkname field's text when it is a regular file).
func tarOf(t *testing.T, ours bool, hs ...*tar.Header) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if ours {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "./", Mode: 0o755, Format: tar.FormatPAX,
			PAXRecords: map[string]string{paxKey: `{"version":1,"id":"x","time":"2026-01-01T00:00:00Z"}`}})
	}
	for _, h := range hs {
		body := ""
		if h.Typeflag == tar.TypeReg {
			body, h.Linkname = h.Linkname, ""
			h.Size = int64(len(body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	tw.Close()
	return &buf
}

// TestImportRefusesAndKeepsNothing: what is not an export, paths that
// leave the tree, hard links, devices and FIFOs are refused with
// ops.ErrConfig, leaving no checkpoint and no blob.
func TestImportRefusesAndKeepsNothing(t *testing.T) {
	file := func(name, body string) *tar.Header {
		return &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Linkname: body}
	}
	cases := map[string]struct {
		tar  *bytes.Buffer
		want string
	}{
		"plain tar":    {tarOf(t, false, file("a", "x")), "not a checkpoint export"},
		"not a tar":    {bytes.NewBufferString(strings.Repeat("junk", 300)), "not a checkpoint export"},
		"dot-dot":      {tarOf(t, true, file("a", "kept?"), file("../evil", "x")), "leaves the workspace"},
		"inner dotdot": {tarOf(t, true, file("a/../../evil", "x")), "leaves the workspace"},
		"absolute":     {tarOf(t, true, file("/etc/evil", "x")), "leaves the workspace"},
		"hard link":    {tarOf(t, true, file("a", "x"), &tar.Header{Typeflag: tar.TypeLink, Name: "b", Linkname: "a"}), "hard link"},
		"device":       {tarOf(t, true, &tar.Header{Typeflag: tar.TypeChar, Name: "null", Devmajor: 1, Devminor: 3}), "special file"},
		"fifo":         {tarOf(t, true, &tar.Header{Typeflag: tar.TypeFifo, Name: "p"}), "special file"},
		"twice":        {tarOf(t, true, file("a", "1"), file("a", "2")), "appears twice"},
		"under a file": {tarOf(t, true, file("a", "1"), file("a/b", "2")), "not a directory"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			s := openStore(t)
			_, err := s.Import(c.tar, "")
			if err == nil || !errors.Is(err, ops.ErrConfig) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("import: %v; want ops.ErrConfig saying %q", err, c.want)
			}
			if all, _ := s.List(); len(all) != 0 {
				t.Fatalf("a refused import left checkpoints: %v", all)
			}
			blobs, _ := filepath.Glob(filepath.Join(s.Dir(), "blobs", "*", "*"))
			if len(blobs) != 0 {
				t.Fatalf("a refused import left blobs: %v", blobs)
			}
		})
	}
}

// TestImportFillsParentsAndRenames: a parent the archive does not list
// becomes a directory; the name given replaces the exported one.
func TestImportFillsParentsAndRenames(t *testing.T) {
	s := openStore(t)
	c, err := s.Import(tarOf(t, true, &tar.Header{Typeflag: tar.TypeReg, Name: "d/e/f.txt", Mode: 0o600, Linkname: "hi"}), "mine")
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "mine" || c.Files != 3 {
		t.Fatalf("imported %+v; want name mine and 3 entries", c)
	}
	root := t.TempDir()
	if _, _, err := s.Restore(root, "mine"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "d/e/f.txt"))
	fi, _ := os.Stat(filepath.Join(root, "d/e/f.txt"))
	if err != nil || string(b) != "hi" || fi.Mode().Perm() != 0o600 {
		t.Fatalf("restored %q %v (%v)", b, fi.Mode(), err)
	}
}

// TestExportDetectsDamage: a blob changed in the store fails the export
// naming the file.
func TestExportDetectsDamage(t *testing.T) {
	s := openStore(t)
	root := t.TempDir()
	write(t, filepath.Join(root, "f"), "original")
	cp := mustCreate(t, s, root, Options{})
	blobs, _ := filepath.Glob(filepath.Join(s.Dir(), "blobs", "*", "*"))
	if len(blobs) != 1 {
		t.Fatalf("blobs %v", blobs)
	}
	os.WriteFile(blobs[0], []byte("damaged!"), 0o600)
	_, err := s.Export(new(bytes.Buffer), cp.ID, nil)
	if err == nil || !strings.Contains(err.Error(), "damaged") || !strings.Contains(err.Error(), "f") {
		t.Fatalf("export of a damaged blob: %v", err)
	}
}
