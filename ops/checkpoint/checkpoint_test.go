package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
	"github.com/pi-sandbox/pi-sandbox/ops/checkpoint/treetest"
)

func write(t *testing.T, p, data string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestStoreInsideTreeExcludesAndSpecialFiles: the store under the tree is
// not captured, --exclude patterns are not, FIFOs are skipped and named.
func TestStoreInsideTreeExcludesAndSpecialFiles(t *testing.T) {
	root := t.TempDir()
	s, err := Open(filepath.Join(root, ".state", "store"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "keep.txt"), "x")
	write(t, filepath.Join(root, "node_modules", "m.js"), "x")
	write(t, filepath.Join(root, "src", "a.log"), "x")
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := mustCreate(t, s, root, Options{Exclude: []string{"node_modules", "*.log", ".state"}})
	if len(r.Skipped) != 1 || r.Skipped[0] != "fifo" {
		t.Errorf("skipped %q, want [fifo]", r.Skipped)
	}
	_, ents, err := readManifest(s.manifestPath(r.ID), false)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range ents {
		paths = append(paths, e.Path)
	}
	if got := strings.Join(paths, ","); got != "keep.txt,src" {
		t.Errorf("captured %s, want keep.txt,src", got)
	}
	// Not excluded, the store is still not captured.
	r = mustCreate(t, s, root, Options{})
	_, ents, _ = readManifest(s.manifestPath(r.ID), false)
	for _, e := range ents {
		if strings.HasPrefix(e.Path, ".state/store") {
			t.Errorf("the store was captured: %s", e.Path)
		}
	}
	if err := CheckExcludes([]string{"[a"}); err == nil {
		t.Error("a malformed pattern was accepted")
	}
}

// TestRestoreRemovesChangesAndKeepsExcluded: a restore reverts, recreates
// and removes, leaves excluded paths alone and can itself be undone.
func TestRestoreRemovesChangesAndKeepsExcluded(t *testing.T) {
	root := t.TempDir()
	s := openStore(t)
	write(t, filepath.Join(root, "a.txt"), "one\n")
	write(t, filepath.Join(root, "d", "b.txt"), "two\n")
	os.Mkdir(filepath.Join(root, "empty"), 0o755)
	before := treetest.Snapshot(t, root)
	cp := mustCreate(t, s, root, Options{Name: "start", Exclude: []string{"*.tmp"}})
	write(t, filepath.Join(root, "a.txt"), "changed\n")
	os.RemoveAll(filepath.Join(root, "d"))
	os.Remove(filepath.Join(root, "empty"))
	write(t, filepath.Join(root, "new", "c.txt"), "new\n")
	write(t, filepath.Join(root, "scratch.tmp"), "kept\n")
	after := treetest.Snapshot(t, root)

	d, err := s.Changes(root, "start", "")
	if err != nil {
		t.Fatal(err)
	}
	want := "M\t\"a.txt\"\nD\t\"d/\"\nD\t\"d/b.txt\"\nD\t\"empty/\"\nA\t\"new/\"\nA\t\"new/c.txt\"\n"
	if got := nameStatus(d.Changes); got != want {
		t.Errorf("name-status\n%s\nwant\n%s", got, want)
	}
	tc, pre, err := s.Restore(root, "start")
	if err != nil {
		t.Fatal(err)
	}
	if tc.ID != cp.ID || pre.Name != "pre-restore-1" {
		t.Errorf("restored %s (pre %q), want %s (pre-restore-1)", tc.ID, pre.Name, cp.ID)
	}
	b, _ := os.ReadFile(filepath.Join(root, "scratch.tmp"))
	os.Remove(filepath.Join(root, "scratch.tmp"))
	if got := treetest.Snapshot(t, root); got != before || string(b) != "kept\n" {
		t.Errorf("after restore\n%s\nwant\n%s (excluded file %q)", got, before, b)
	}
	write(t, filepath.Join(root, "scratch.tmp"), "kept\n")
	if _, _, err := s.Restore(root, "pre-restore-1"); err != nil {
		t.Fatal(err)
	}
	if got := treetest.Snapshot(t, root); got != after {
		t.Errorf("after undoing the restore\n%s\nwant\n%s", got, after)
	}
}

// TestRestoreNeverWritesThroughALink: a directory turned into a link to
// a place outside the tree is replaced, the outside untouched.
func TestRestoreNeverWritesThroughALink(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	s := openStore(t)
	write(t, filepath.Join(root, "d", "f"), "inside\n")
	cp := mustCreate(t, s, root, Options{})
	os.RemoveAll(filepath.Join(root, "d"))
	write(t, filepath.Join(outside, "f"), "outside\n")
	os.Symlink(outside, filepath.Join(root, "d"))
	if _, _, err := s.Restore(root, cp.ID); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "f")); string(b) != "outside\n" {
		t.Errorf("the file outside became %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(root, "d")); err != nil || !fi.IsDir() {
		t.Errorf("d is not a directory again: %v", err)
	}
}

// TestRemoveCollectsBlobs: removing a checkpoint removes the blobs only it
// used; names resolve to the newest.
func TestRemoveCollectsBlobs(t *testing.T) {
	root := t.TempDir()
	s := openStore(t)
	write(t, filepath.Join(root, "shared"), "s")
	write(t, filepath.Join(root, "f"), "first")
	first := mustCreate(t, s, root, Options{Name: "n"})
	write(t, filepath.Join(root, "f"), "second")
	second := mustCreate(t, s, root, Options{Name: "n"})
	if second.Bytes != int64(len("second")) {
		t.Errorf("second checkpoint added %d bytes, want 6", second.Bytes)
	}
	if c, err := s.Resolve("n"); err != nil || c.ID != second.ID {
		t.Errorf("n resolves to %v (%v), want the newest %s", c.ID, err, second.ID)
	}
	if _, err := s.Remove(first.ID); err != nil {
		t.Fatal(err)
	}
	blobs := 0
	filepath.WalkDir(filepath.Join(s.Dir(), "blobs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			blobs++
		}
		return nil
	})
	if blobs != 2 {
		t.Errorf("%d blobs left, want 2", blobs)
	}
	if _, err := s.Resolve(first.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("a removed checkpoint resolves: %v", err)
	}
	if _, err := openStore(t).Resolve(""); !errors.Is(err, ErrNone) {
		t.Errorf("an empty store: %v, want ErrNone", err)
	}
}

// TestIncrementalReadsOnlyChanged: an unchanged file (older than the
// racy margin) is taken from the index, not read.
func TestIncrementalReadsOnlyChanged(t *testing.T) {
	root := t.TempDir()
	s := openStore(t)
	write(t, filepath.Join(root, "old"), "old")
	past := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(root, "old"), past, past)
	mustCreate(t, s, root, Options{})
	x := s.loadIndex()
	if e, ok := x.entries["old"]; !ok || !x.trusted(e) {
		t.Fatalf("the index does not trust an hour-old file: %+v", x)
	}
	// A damaged blob is not noticed by a checkpoint that does not read the
	// file: it reused the index's blob.
	e := x.entries["old"]
	os.WriteFile(s.blobPath(e.blob), []byte("other"), 0o600)
	r := mustCreate(t, s, root, Options{})
	if r.Bytes != 0 {
		t.Errorf("the unchanged file was read again (%d bytes added)", r.Bytes)
	}
	// Its content changed (same size, mtime put back): the ctime tells.
	write(t, filepath.Join(root, "old"), "new")
	os.Chtimes(filepath.Join(root, "old"), past, past)
	if r = mustCreate(t, s, root, Options{}); r.Bytes != 3 {
		t.Errorf("a changed file was not read again (%d bytes added)", r.Bytes)
	}
}

// TestLockWaitIsBounded: another holder of the lock makes an operation
// fail after LockWait, saying why.
func TestLockWaitIsBounded(t *testing.T) {
	s := openStore(t)
	testenv.HoldFlock(t, filepath.Join(s.Dir(), "lock"))
	defer func(d time.Duration) { LockWait = d }(LockWait)
	LockWait = 50 * time.Millisecond
	if _, err := s.Create(t.TempDir(), Options{}); err == nil || !strings.Contains(err.Error(), "held the lock") {
		t.Errorf("got %v, want the lock refusal", err)
	}
}

// TestInterruptedRestoreIsCompleted: a journal left by a restore killed
// midway is completed by the next operation.
func TestInterruptedRestoreIsCompleted(t *testing.T) {
	root := t.TempDir()
	s := openStore(t)
	write(t, filepath.Join(root, "a"), "a\n")
	cp := mustCreate(t, s, root, Options{})
	want := treetest.Snapshot(t, root)
	write(t, filepath.Join(root, "a"), "changed\n")
	write(t, filepath.Join(root, "b"), "b\n")
	// As a restore does just before it starts changing files.
	if err := writeFileSync(s.journalPath(), []byte(`{"id":"`+cp.ID+`","root":"`+root+`"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(); err != nil { // List does not complete it
		t.Fatal(err)
	}
	if _, err := s.Changes(root, "", ""); err != nil {
		t.Fatal(err)
	}
	if got := treetest.Snapshot(t, root); got != want {
		t.Errorf("after the next call\n%s\nwant\n%s", got, want)
	}
	if _, err := os.Stat(s.journalPath()); !os.IsNotExist(err) {
		t.Errorf("the journal is still there: %v", err)
	}
}

// TestRestoreVerifiesBlobs: a damaged blob fails the restore naming the
// file, which keeps its content.
func TestRestoreVerifiesBlobs(t *testing.T) {
	root := t.TempDir()
	s := openStore(t)
	write(t, filepath.Join(root, "f"), "good\n")
	cp := mustCreate(t, s, root, Options{})
	_, ents, _ := readManifest(s.manifestPath(cp.ID), false)
	os.WriteFile(s.blobPath(ents[0].Blob), []byte("evil\n"), 0o600)
	write(t, filepath.Join(root, "f"), "now\n")
	_, _, err := s.Restore(root, cp.ID)
	if err == nil || !strings.Contains(err.Error(), "restore f:") {
		t.Fatalf("got %v, want a failure naming f", err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "f")); string(b) != "now\n" {
		t.Errorf("f holds %q", b)
	}
}

// TestPatchAppliesWithGit: the patch from a checkpoint to the tree, applied
// with git apply to a copy of the checkpoint, gives the tree.
func TestPatchAppliesWithGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		testenv.SkipOrFail(t, "no git: "+err.Error())
	}
	root, cp2 := t.TempDir(), t.TempDir()
	s := openStore(t)
	files := map[string]string{"a.txt": "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "gone": "bye\n", "\xffname": "raw\n", "sp ace": "x", "mode": "m\n", "empty": ""}
	for n, d := range files {
		write(t, filepath.Join(root, n), d)
		write(t, filepath.Join(cp2, n), d)
	}
	os.Symlink("a.txt", filepath.Join(root, "link"))
	os.Symlink("a.txt", filepath.Join(cp2, "link"))
	mustCreate(t, s, root, Options{})
	write(t, filepath.Join(root, "a.txt"), "1\n2\nTWO\n3\n4\n5\n6\n7\n8\n9\n10\n12\nend")
	os.Remove(filepath.Join(root, "gone"))
	write(t, filepath.Join(root, "new", "file"), "hello\n")
	write(t, filepath.Join(root, "new", "empty"), "")
	write(t, filepath.Join(root, "\xffname"), "raw2\n")
	os.Chmod(filepath.Join(root, "mode"), 0o755)
	os.Remove(filepath.Join(root, "link"))
	os.Symlink("other", filepath.Join(root, "link"))
	var buf bytes.Buffer
	if _, err := s.WriteDiff(&buf, root, "", "", Patch); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "apply", "--unsafe-paths", "-")
	cmd.Dir, cmd.Stdin = cp2, bytes.NewReader(buf.Bytes())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s\npatch:\n%s", err, out, buf.String())
	}
	if got, want := treetest.Snapshot(t, cp2), treetest.Snapshot(t, root); got != want {
		t.Errorf("applied\n%s\nwant\n%s\npatch:\n%s", got, want, buf.String())
	}
	buf.Reset()
	if _, err := s.WriteDiff(&buf, root, "", "", Stat); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), " 7 files changed, ") {
		t.Errorf("stat:\n%s", buf.String())
	}
}

// TestAutoPruneAndCallRefs: automatic checkpoints beyond AutoKeep (plus
// the slack) are pruned to the newest AutoKeep with the blobs only they
// used; named ones stay; a tool-call id finds its checkpoint, and a name
// wins over a call id.
func TestAutoPruneAndCallRefs(t *testing.T) {
	defer func(d bool) { durable = d }(durable)
	durable = false
	s := openStore(t)
	root := t.TempDir()
	write(t, filepath.Join(root, "f"), "named")
	named := mustCreate(t, s, root, Options{Name: "keep", Call: "x-1"})
	for i := 1; i <= AutoKeep+autoSlack+1; i++ {
		write(t, filepath.Join(root, "f"), fmt.Sprint("v", i))
		mustCreate(t, s, root, Options{Name: fmt.Sprint("call-", i), Auto: true, Call: fmt.Sprint("id-", i)})
	}
	all, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != AutoKeep+1 || all[0].ID != named.ID || all[1].Name != fmt.Sprint("call-", autoSlack+2) {
		t.Fatalf("after pruning: %d checkpoints, first %+v, second %+v", len(all), all[0], all[1])
	}
	blobs, _ := filepath.Glob(filepath.Join(s.Dir(), "blobs", "*", "*"))
	if len(blobs) != AutoKeep+1 {
		t.Fatalf("%d blobs after pruning, want %d", len(blobs), AutoKeep+1)
	}
	if c, err := s.Resolve(fmt.Sprint("id-", AutoKeep)); err != nil || c.Name != fmt.Sprint("call-", AutoKeep) {
		t.Fatalf("resolve by call id: %+v, %v", c, err)
	}
	mustCreate(t, s, root, Options{Name: "x-1"})
	if c, err := s.Resolve("x-1"); err != nil || c.Call != "" {
		t.Fatalf("a name wins over a call id: %+v, %v", c, err)
	}
}

// TestStoreLimit: a checkpoint or import that would pass the store's
// limit fails naming it and keeps nothing it added; earlier checkpoints
// stay; removing the limit lets it through.
func TestStoreLimit(t *testing.T) {
	s := openStore(t)
	root := t.TempDir()
	write(t, filepath.Join(root, "small"), "0123456789")
	first := mustCreate(t, s, root, Options{})
	if err := s.SetLimit(1000); err != nil || s.Limit() != 1000 {
		t.Fatalf("SetLimit: %v, limit %d", err, s.Limit())
	}
	write(t, filepath.Join(root, "a"), strings.Repeat("a", 600))
	write(t, filepath.Join(root, "b"), strings.Repeat("b", 600))
	_, err := s.Create(root, Options{})
	if err == nil || !strings.Contains(err.Error(), "limit of 1000 bytes would be passed") {
		t.Fatalf("a checkpoint over the limit: %v", err)
	}
	blobs, _ := filepath.Glob(filepath.Join(s.Dir(), "blobs", "*", "*"))
	if all, _ := s.List(); len(all) != 1 || all[0].ID != first.ID || len(blobs) != 1 {
		t.Fatalf("after the refused checkpoint: %v, blobs %v", all, blobs)
	}
	var tarBuf bytes.Buffer
	src := openStore(t)
	c := mustCreate(t, src, root, Options{})
	if _, err := src.Export(&tarBuf, c.ID, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Import(bytes.NewReader(tarBuf.Bytes()), ""); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("an import over the limit: %v", err)
	}
	if blobs, _ := filepath.Glob(filepath.Join(s.Dir(), "blobs", "*", "*")); len(blobs) != 1 {
		t.Fatalf("a refused import left blobs: %v", blobs)
	}
	s.SetLimit(-1)
	if _, err := s.Create(root, Options{}); err != nil {
		t.Fatalf("without the limit: %v", err)
	}
}
