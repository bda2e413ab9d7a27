package helper_test

import (
	"bytes"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/checkpoint/treetest"
)

// TestCheckpointOverPipe: checkpoint, diff, patch, stat and restore run in
// the helper; outcomes and errors come back whole (non-UTF-8 names too).
func TestCheckpointOverPipe(t *testing.T) {
	b := open(t)
	cf, ok := b.(ops.CheckpointFS)
	if !ok {
		t.Fatal("the helper client is not an ops.CheckpointFS")
	}
	ctx := t.Context()
	root := b.Info().WorkDir
	store := filepath.Join(t.TempDir(), "store")
	do := func(op ops.CheckpointOp, out *bytes.Buffer) (*ops.CheckpointResult, error) {
		op.Store, op.Root = store, root
		if out == nil {
			return cf.Checkpoint(ctx, &op, nil)
		}
		return cf.Checkpoint(ctx, &op, out)
	}
	if _, err := do(ops.CheckpointOp{Op: ops.CheckpointDiff}, nil); !errors.Is(err, ops.ErrNoCheckpoint) {
		t.Fatalf("diff with no checkpoint: %v, want ops.ErrNoCheckpoint", err)
	}
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("one\ntwo\n"), 0o644)
	os.WriteFile(filepath.Join(root, "\xff.bin"), []byte("raw"), 0o600)
	os.Mkdir(filepath.Join(root, "empty"), 0o755)
	syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600)
	r, err := do(ops.CheckpointOp{Op: ops.CheckpointCreate, Name: "first"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Checkpoint.Name != "first" || r.Checkpoint.Files != 3 || len(r.Skipped) != 1 || r.Skipped[0] != "fifo" {
		t.Errorf("created %+v, skipped %q", r.Checkpoint, r.Skipped)
	}
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("one\nTWO\n"), 0o644)
	os.Remove(filepath.Join(root, "\xff.bin"))
	os.Symlink("/etc/passwd", filepath.Join(root, "link"))
	d, err := do(ops.CheckpointOp{Op: ops.CheckpointDiff}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range d.Changes {
		got = append(got, c.Status+" "+c.Path+" "+c.What)
	}
	if want := "M a.txt content|A link added|D \xff.bin deleted"; strings.Join(got, "|") != want {
		t.Errorf("changes %q, want %q", strings.Join(got, "|"), want)
	}
	var patch bytes.Buffer
	if _, err := do(ops.CheckpointOp{Op: ops.CheckpointPatch, Ref: "first"}, &patch); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(patch.String(), "-two\n+TWO\n") || !strings.Contains(patch.String(), `diff --git "a/\377.bin" "b/\377.bin"`) {
		t.Errorf("patch:\n%s", patch.String())
	}
	rr, err := do(ops.CheckpointOp{Op: ops.CheckpointRestore, Ref: "first"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rr.Checkpoint.ID != r.Checkpoint.ID || rr.Pre.Name != "pre-restore-1" {
		t.Errorf("restored %+v, pre %+v", rr.Checkpoint, rr.Pre)
	}
	if b, err := os.ReadFile(filepath.Join(root, "\xff.bin")); err != nil || string(b) != "raw" {
		t.Errorf("the deleted file came back as %q (%v)", b, err)
	}
	if _, err := os.Lstat(filepath.Join(root, "link")); !os.IsNotExist(err) {
		t.Errorf("the added link is still there: %v", err)
	}
	l, err := do(ops.CheckpointOp{Op: ops.CheckpointList}, nil)
	if err != nil || len(l.List) != 2 {
		t.Fatalf("list: %+v, %v", l, err)
	}
	if _, err := do(ops.CheckpointOp{Op: ops.CheckpointRemove, Ref: "nope"}, nil); !errors.Is(err, ops.ErrUnknownCheckpoint) {
		t.Errorf("rm of an unknown name: %v", err)
	}
	if _, err := do(ops.CheckpointOp{Op: ops.CheckpointCreate, Exclude: []string{"[x"}}, nil); !errors.Is(err, ops.ErrConfig) {
		t.Errorf("a bad pattern: %v, want ops.ErrConfig", err)
	}
}

// TestCheckpointPropertyOverPipe: restore(checkpoint(A)) over a random B
// gives A bit for bit, through the helper (a smaller set than package
// checkpoint's own).
func TestCheckpointPropertyOverPipe(t *testing.T) {
	b := open(t)
	cf := b.(ops.CheckpointFS)
	ctx := t.Context()
	root := b.Info().WorkDir
	store := filepath.Join(t.TempDir(), "store")
	r := rand.New(rand.NewSource(3))
	for i := 0; i < 100; i++ {
		treetest.Clear(t, root)
		treetest.Materialize(t, root, treetest.Rand(r))
		want := treetest.Snapshot(t, root)
		c, err := cf.Checkpoint(ctx, &ops.CheckpointOp{Op: ops.CheckpointCreate, Store: store, Root: root}, nil)
		if err != nil {
			t.Fatal(err)
		}
		treetest.Clear(t, root)
		treetest.Materialize(t, root, treetest.Rand(r))
		if _, err := cf.Checkpoint(ctx, &ops.CheckpointOp{Op: ops.CheckpointRestore, Store: store, Root: root, Ref: c.Checkpoint.ID}, nil); err != nil {
			t.Fatalf("tree %d: %v", i, err)
		}
		if got := treetest.Snapshot(t, root); got != want {
			t.Fatalf("tree %d: restored\n%s\nwant\n%s", i, got, want)
		}
	}
}

// TestCheckpointExportImportOverPipe: an export streams out of the
// helper within the bound its reply announced, an import streams in, and
// the imported checkpoint restores the tree bit for bit; a tar that is
// not an export is refused with ops.ErrConfig.
func TestCheckpointExportImportOverPipe(t *testing.T) {
	b := open(t)
	cf := b.(ops.CheckpointFS)
	ctx := t.Context()
	root := b.Info().WorkDir
	src, dst := filepath.Join(t.TempDir(), "src"), filepath.Join(t.TempDir(), "dst")
	r := rand.New(rand.NewSource(5))
	for i := 0; i < 30; i++ {
		treetest.Clear(t, root)
		treetest.Materialize(t, root, treetest.Rand(r))
		want := treetest.Snapshot(t, root)
		c, err := cf.Checkpoint(ctx, &ops.CheckpointOp{Op: ops.CheckpointCreate, Store: src, Root: root, Name: "x"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var tarBuf bytes.Buffer
		ex, err := cf.Checkpoint(ctx, &ops.CheckpointOp{Op: ops.CheckpointExport, Store: src, Root: root, Ref: c.Checkpoint.ID}, &tarBuf)
		if err != nil {
			t.Fatalf("tree %d: export: %v", i, err)
		}
		if ex.Checkpoint.ID != c.Checkpoint.ID || ex.Size < int64(tarBuf.Len()) {
			t.Fatalf("tree %d: export of %s reported %+v, bound %d for %d bytes", i, c.Checkpoint.ID, ex.Checkpoint, ex.Size, tarBuf.Len())
		}
		im, err := cf.Checkpoint(ctx, &ops.CheckpointOp{Op: ops.CheckpointImport, Store: dst, Root: root, In: &tarBuf}, nil)
		if err != nil {
			t.Fatalf("tree %d: import: %v", i, err)
		}
		treetest.Clear(t, root)
		if _, err := cf.Checkpoint(ctx, &ops.CheckpointOp{Op: ops.CheckpointRestore, Store: dst, Root: root, Ref: im.Checkpoint.ID}, nil); err != nil {
			t.Fatalf("tree %d: restore: %v", i, err)
		}
		if got := treetest.Snapshot(t, root); got != want {
			t.Fatalf("tree %d: imported and restored\n%s\nwant\n%s", i, got, want)
		}
	}
	_, err := cf.Checkpoint(ctx, &ops.CheckpointOp{Op: ops.CheckpointImport, Store: dst, Root: root, In: strings.NewReader(strings.Repeat("junk", 1000))}, nil)
	if !errors.Is(err, ops.ErrConfig) || !strings.Contains(err.Error(), "not a checkpoint export") {
		t.Fatalf("import of junk: %v", err)
	}
}
