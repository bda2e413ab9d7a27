package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops/checkpoint"
	"github.com/pi-sandbox/pi-sandbox/ops/local"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
)

// TestAutoCheckpoint: with AutoCheckpoint every executed write, edit and
// bash call is followed by a checkpoint "call-N" that its tool-call id
// finds too; a read is not; a diff between two shows one step; a
// checkpoint that cannot be made leaves the call's result alone and is
// told to the note.
func TestAutoCheckpoint(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	dir := t.TempDir()
	lb, err := local.New(t.Context(), local.Config{WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var notes []string
	sb, err := sandbox.OpenBackend(t.Context(), lb, sandbox.Config{AutoCheckpoint: true, AutoCheckpointNote: func(s string) {
		mu.Lock()
		notes = append(notes, s)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	call := func(name string, args map[string]any) {
		t.Helper()
		res, err := sb.Call(t.Context(), name, args)
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
	}
	call("write", map[string]any{"path": "a.txt", "content": "one\n"})                // call-1
	call("read", map[string]any{"path": "a.txt"})                                     // call-2: no checkpoint
	call("edit", map[string]any{"path": "a.txt", "oldText": "one", "newText": "two"}) // call-3
	call("bash", map[string]any{"command": "echo three > b.txt"})                     // call-4
	list, err := sb.Checkpoints(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range list {
		if !c.Auto || !strings.HasPrefix(c.Call, "call-") {
			t.Errorf("checkpoint %+v: want an automatic one with the tool-call id", c)
		}
		names = append(names, c.Name)
	}
	if got := strings.Join(names, " "); got != "call-1 call-3 call-4" {
		t.Fatalf("automatic checkpoints %q, want call-1 call-3 call-4", got)
	}
	d, err := sb.Diff(t.Context(), "call-3", "call-4")
	if err != nil || len(d.Changes) != 1 || d.Changes[0].Path != "b.txt" || d.Changes[0].Status != "A" {
		t.Fatalf("diff call-3 call-4: %+v, %v", d, err)
	}
	if c, err := sb.Diff(t.Context(), list[1].Call, "call-4"); err != nil || c.From.ID != list[1].ID {
		t.Fatalf("the tool-call id %s as a ref: %+v, %v", list[1].Call, c, err)
	}
	if _, _, err := sb.Restore(t.Context(), "call-1"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "one\n" {
		t.Fatalf("after restore call-1: a.txt %q", b)
	}

	// A held store lock: the checkpoint fails, the call does not.
	defer func(w time.Duration) { checkpoint.LockWait = w }(checkpoint.LockWait)
	checkpoint.LockWait = 50 * time.Millisecond
	lock, err := os.OpenFile(filepath.Join(sb.Backend().Info().CheckpointDir, "lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	res, err := sb.Call(t.Context(), "write", map[string]any{"path": "c.txt", "content": "x"})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].Text, "Successfully wrote") {
		t.Fatalf("write with the store locked: %v %+v", err, res)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(notes) != 1 || !strings.Contains(notes[0], "automatic checkpoint after call-") || !strings.Contains(notes[0], "held the lock") {
		t.Fatalf("notes %q", notes)
	}
}
