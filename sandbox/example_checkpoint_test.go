package sandbox_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/pi-sandbox/pi-sandbox/ops/local"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
)

// Checkpoint the workspace, let a tool change it, see what changed and
// undo it. The store is in the target's state directory (locally
// $XDG_STATE_HOME/pi-sandbox, here a temporary one).
func ExampleSandbox_Checkpoint() {
	ctx := context.Background()
	state, _ := os.MkdirTemp("", "state-")
	defer os.RemoveAll(state)
	os.Setenv("XDG_STATE_HOME", state)
	wd, _ := os.MkdirTemp("", "work-")
	defer os.RemoveAll(wd)
	os.WriteFile(filepath.Join(wd, "notes.txt"), []byte("keep me\n"), 0o644)

	b, err := local.New(ctx, local.Config{WorkDir: wd})
	if err != nil {
		log.Fatal(err)
	}
	sb, err := sandbox.OpenBackend(ctx, b, sandbox.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Close()
	if _, _, err := sb.Checkpoint(ctx, sandbox.CheckpointOptions{Name: "before"}); err != nil {
		log.Fatal(err)
	}
	if _, err := sb.Call(ctx, "bash", map[string]any{"command": "rm notes.txt && echo hi > new.txt"}); err != nil {
		log.Fatal(err)
	}
	d, err := sb.Diff(ctx, "before", "")
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range d.Changes {
		fmt.Println(c.Status, c.Path)
	}
	if _, _, err := sb.Restore(ctx, "before"); err != nil {
		log.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(wd, "notes.txt"))
	fmt.Print(string(data))
	// Output:
	// A new.txt
	// D notes.txt
	// keep me
}

// Move a checkpoint from one sandbox to another (of any backend): export
// it as a tar, import it there, restore it.
func ExampleSandbox_ExportCheckpoint() {
	ctx := context.Background()
	state, _ := os.MkdirTemp("", "state-")
	defer os.RemoveAll(state)
	os.Setenv("XDG_STATE_HOME", state)
	open := func() (*sandbox.Sandbox, string) {
		wd, _ := os.MkdirTemp("", "work-")
		b, err := local.New(ctx, local.Config{WorkDir: wd})
		if err != nil {
			log.Fatal(err)
		}
		sb, err := sandbox.OpenBackend(ctx, b, sandbox.Config{})
		if err != nil {
			log.Fatal(err)
		}
		return sb, wd
	}
	src, srcDir := open()
	defer src.Close()
	defer os.RemoveAll(srcDir)
	dst, dstDir := open()
	defer dst.Close()
	defer os.RemoveAll(dstDir)

	os.WriteFile(filepath.Join(srcDir, "prepared.txt"), []byte("ready\n"), 0o644)
	if _, _, err := src.Checkpoint(ctx, sandbox.CheckpointOptions{Name: "prepared"}); err != nil {
		log.Fatal(err)
	}
	var tar bytes.Buffer
	if _, err := src.ExportCheckpoint(ctx, &tar, "prepared"); err != nil {
		log.Fatal(err)
	}
	c, err := dst.ImportCheckpoint(ctx, &tar, "")
	if err != nil {
		log.Fatal(err)
	}
	if _, _, err := dst.Restore(ctx, c.ID); err != nil {
		log.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dstDir, "prepared.txt"))
	fmt.Print(c.Name, ": ", string(data))
	// Output:
	// prepared: ready
}
