package local

import (
	"context"
	"io"
	"os"
	"path/filepath"

	"github.com/pi-sandbox/pi-sandbox/internal/spillkey"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/checkpoint"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/native"
)

// checkpointDir is the store of wd's checkpoints:
// $XDG_STATE_HOME/pi-sandbox/checkpoints/KEY (~/.local/state without it),
// keyed by the working directory as spill directories are; "" with no
// home.
func checkpointDir(wd string) string {
	base := os.Getenv("XDG_STATE_HOME")
	if !filepath.IsAbs(base) {
		home, err := os.UserHomeDir()
		if err != nil || !filepath.IsAbs(home) {
			return ""
		}
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "pi-sandbox", "checkpoints", spillkey.Key("", wd))
}

// Checkpoint runs a checkpoint operation on this machine's files, in this
// process.
func (b *Backend) Checkpoint(ctx context.Context, op *ops.CheckpointOp, out io.Writer) (*ops.CheckpointResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return checkpoint.DoFrozen(op, out, native.Freeze)
}
