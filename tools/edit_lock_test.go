package tools_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
	"github.com/pi-sandbox/pi-sandbox/ops/local"
	"github.com/pi-sandbox/pi-sandbox/tools"
)

// TestEditDirectoryLockHeld: on the local backend (its helper edits under
// an exclusive flock of the file's directory), while another process holds
// that flock an aborted edit returns at once, and an edit left alone fails
// after the helper's bound (10 s) with a text naming the lock; neither
// changes the file.
func TestEditDirectoryLockHeld(t *testing.T) {
	wd := t.TempDir()
	b, err := local.New(t.Context(), local.Config{WorkDir: wd})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if !b.Info().Has("helper") {
		t.Fatalf("no helper: %v", b.Info().Limits)
	}
	f := filepath.Join(wd, "a.txt")
	if err := os.WriteFile(f, []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.HoldFlock(t, wd)
	edit := tools.NewEdit(b, b.Info(), tools.NewMutationQueue(b))
	args := map[string]any{"path": "a.txt", "edits": []any{map[string]any{"oldText": "alpha", "newText": "beta"}}}

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = edit.Execute(ctx, "e1", args, nil)
	if d := time.Since(start); d > time.Second {
		t.Errorf("aborted edit returned after %v, want < 1s", d)
	}
	if err == nil || err.Error() != "Operation aborted" {
		t.Errorf("aborted edit: %v", err)
	}

	start = time.Now()
	_, err = edit.Execute(t.Context(), "e2", args, nil)
	d := time.Since(start)
	want := "Could not edit file: a.txt. could not lock " + wd + ": held by another process (an exclusive flock on the directory); the file was not changed. Try again once that process has released the lock."
	if err == nil || err.Error() != want {
		t.Errorf("edit under a held lock: %v\nwant %s", err, want)
	}
	if d < 9*time.Second || d > 15*time.Second {
		t.Errorf("edit under a held lock gave up after %v, want about 10s", d)
	}
	if got, _ := os.ReadFile(f); string(got) != "alpha\n" {
		t.Errorf("file changed to %q", got)
	}
}
