package savedout_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops/local"
	"github.com/pi-sandbox/pi-sandbox/ops/savedout"
)

// TestTotal: the files under the root (every working directory's spill
// directory) count; files written at once share what is left; a finished
// file's bytes count for the next one; no bound takes everything.
func TestTotal(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	for _, d := range []string{"a", "b"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "b", "old.log"), make([]byte, 600), 0o600); err != nil {
		t.Fatal(err)
	}
	fsys, err := local.New(ctx, local.Config{WorkDir: root, NoHelper: true})
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()

	f1 := savedout.Start(ctx, fsys, filepath.Join(root, "a", "one.log"), 1000)
	f2 := savedout.Start(ctx, fsys, filepath.Join(root, "a", "two.log"), 1000)
	if got := f1.Take(300); got != 300 {
		t.Errorf("first Take = %d, want 300 (600 of 1000 used)", got)
	}
	if got := f2.Take(300); got != 100 {
		t.Errorf("Take of a file written at the same time = %d, want the 100 left", got)
	}
	if f2.Room() {
		t.Error("Room with the total reached")
	}
	for name, n := range map[string]int{"one.log": 300, "two.log": 100} {
		if err := os.WriteFile(filepath.Join(root, "a", name), make([]byte, n), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f1.Done()
	f2.Done()
	f1.Done() // twice is fine
	f3 := savedout.Start(ctx, fsys, filepath.Join(root, "a", "three.log"), 1000)
	if f3.Room() {
		t.Error("Room after the files that filled the total ended (they count as the root's)")
	}
	f3.Done()
	if err := os.Remove(filepath.Join(root, "b", "old.log")); err != nil {
		t.Fatal(err)
	}
	f4 := savedout.Start(ctx, fsys, filepath.Join(root, "a", "four.log"), 1000)
	if got := f4.Take(1000); got != 600 {
		t.Errorf("Take after the old file was removed = %d, want the 600 one.log and two.log leave", got)
	}
	f4.Done()
	free := savedout.Start(ctx, fsys, filepath.Join(root, "a", "five.log"), 0)
	if got := free.Take(1 << 20); got != 1<<20 {
		t.Errorf("Take without a bound = %d", got)
	}
	free.Done()

	err = savedout.Error(4 << 30)
	if !errors.Is(err, savedout.ErrTotal) || !strings.Contains(err.Error(), "total of 4 GiB") {
		t.Errorf("Error = %v", err)
	}
	if n := savedout.Note(10, err); !strings.HasPrefix(n, "\n[pi-sandbox: output after the first 10 bytes was not saved: ") {
		t.Errorf("Note = %q", n)
	}
}
