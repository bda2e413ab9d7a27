package sandbox

import (
	"context"
	"fmt"
	"io"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// The check-then-use confinement keeps ops.CheckpointFS: the workspace and
// store come from the backend's Info, not from the model.
var _ ops.CheckpointFS = (*confined)(nil)

func (c *confined) Checkpoint(ctx context.Context, op *ops.CheckpointOp, out io.Writer) (*ops.CheckpointResult, error) {
	if cf, ok := c.b.(ops.CheckpointFS); ok {
		return cf.Checkpoint(ctx, op, out)
	}
	return nil, fmt.Errorf("checkpoint: %w", ops.ErrUnsupported)
}

// CheckpointOptions says what a checkpoint captures.
type CheckpointOptions struct {
	Name string
	// Exclude holds glob patterns: one without "/" matches a base name at
	// any depth, one with "/" the path from the working directory; a
	// matching directory is left out with everything under it.
	Exclude []string
	// StoreLimit sets the store's limit on the bytes of its contents
	// (kept in the store for every later checkpoint and import: > 0),
	// removes it (< 0) or keeps it (0). A checkpoint that would pass it
	// fails and keeps nothing.
	StoreLimit int64
	// Freeze stops the sandbox's processes (what its commands started and
	// left running, through the helper) while the checkpoint is taken,
	// then resumes them: no concurrent writer leaves a mix of before and
	// after in it. Processes stopped before stay stopped.
	Freeze bool
}

// checkpoint runs op on the working directory's store.
func (s *Sandbox) checkpoint(ctx context.Context, op *ops.CheckpointOp, out io.Writer) (*ops.CheckpointResult, error) {
	cf, ok := s.backend.(ops.CheckpointFS)
	info := s.backend.Info()
	if !ok {
		return nil, ops.ConfigError("sandbox: checkpoints: backend %s cannot make them (they need its helper in the target)", info.Backend)
	}
	if info.CheckpointDir == "" {
		return nil, ops.ConfigError("sandbox: checkpoints need a state directory that outlives this call, and this sandbox has none: an --image one-shot sandbox goes with its container (use pi-sandbox up), and a target whose state directory fell back to a temporary one keeps none")
	}
	op.Store, op.Root = info.CheckpointDir, info.WorkDir
	return cf.Checkpoint(ctx, op, out)
}

// Checkpoint records the working directory (everything under it but the
// store and opt.Exclude) and returns the checkpoint with the paths it
// skipped (FIFOs, sockets, devices). Unchanged files are recognised by
// their stat data and not read again.
func (s *Sandbox) Checkpoint(ctx context.Context, opt CheckpointOptions) (ops.CheckpointInfo, []string, error) {
	r, err := s.checkpoint(ctx, &ops.CheckpointOp{Op: ops.CheckpointCreate, Name: opt.Name, Exclude: opt.Exclude, StoreLimit: opt.StoreLimit, Freeze: opt.Freeze}, nil)
	if err != nil {
		return ops.CheckpointInfo{}, nil, err
	}
	c := *r.Checkpoint
	c.Frozen = r.Frozen
	return c, r.Skipped, nil
}

// Checkpoints lists the working directory's checkpoints, oldest first.
func (s *Sandbox) Checkpoints(ctx context.Context) ([]ops.CheckpointInfo, error) {
	r, err := s.checkpoint(ctx, &ops.CheckpointOp{Op: ops.CheckpointList}, nil)
	if err != nil {
		return nil, err
	}
	return r.List, nil
}

// RemoveCheckpoint removes a checkpoint (an id, a unique prefix of one,
// or a name: the newest with it) and the stored contents only it used.
func (s *Sandbox) RemoveCheckpoint(ctx context.Context, ref string) (ops.CheckpointInfo, error) {
	r, err := s.checkpoint(ctx, &ops.CheckpointOp{Op: ops.CheckpointRemove, Ref: ref}, nil)
	if err != nil {
		return ops.CheckpointInfo{}, err
	}
	return *r.Checkpoint, nil
}

// Diff lists what changed from checkpoint from ("": the newest) to
// checkpoint to ("": the working directory now). Without any checkpoint
// it fails with ops.ErrNoCheckpoint.
func (s *Sandbox) Diff(ctx context.Context, from, to string) (*ops.CheckpointResult, error) {
	return s.checkpoint(ctx, &ops.CheckpointOp{Op: ops.CheckpointDiff, Ref: from, To: to}, nil)
}

// WritePatch writes the changes from from to to (as Diff) to w as a
// unified patch git apply accepts, or, with stat, as git's --stat.
func (s *Sandbox) WritePatch(ctx context.Context, w io.Writer, from, to string, stat bool) error {
	op := ops.CheckpointPatch
	if stat {
		op = ops.CheckpointStat
	}
	_, err := s.checkpoint(ctx, &ops.CheckpointOp{Op: op, Ref: from, To: to}, w)
	return err
}

// Restore makes the working directory the checkpoint ref names, exactly
// (paths the checkpoint excluded aside), having first recorded it as a
// checkpoint named "pre-restore-N" (returned second), which undoes it.
func (s *Sandbox) Restore(ctx context.Context, ref string) (restored, pre ops.CheckpointInfo, err error) {
	r, err := s.checkpoint(ctx, &ops.CheckpointOp{Op: ops.CheckpointRestore, Ref: ref}, nil)
	if err != nil {
		return restored, pre, err
	}
	return *r.Checkpoint, *r.Pre, nil
}

// ExportCheckpoint writes the checkpoint ref names to w as a tar (PAX
// format; other tar programs read it): the root "./" first, with the
// checkpoint's name, time and exclude patterns in a PISANDBOX.checkpoint
// record, then each directory, file and symbolic link with its mode.
// ImportCheckpoint of another sandbox, of any backend, takes it.
func (s *Sandbox) ExportCheckpoint(ctx context.Context, w io.Writer, ref string) (ops.CheckpointInfo, error) {
	r, err := s.checkpoint(ctx, &ops.CheckpointOp{Op: ops.CheckpointExport, Ref: ref}, w)
	if err != nil {
		return ops.CheckpointInfo{}, err
	}
	return *r.Checkpoint, nil
}

// ImportCheckpoint records the tar ExportCheckpoint wrote as a new
// checkpoint of this sandbox's working directory (named name, or as the
// exported one when name is ""), without touching the directory: Restore
// it to make the directory hold it. A tar that is not an export, an entry
// whose path leaves the directory (absolute, "..") and hard links,
// devices or FIFOs are refused (ops.ErrConfig) and nothing is kept.
func (s *Sandbox) ImportCheckpoint(ctx context.Context, r io.Reader, name string) (ops.CheckpointInfo, error) {
	res, err := s.checkpoint(ctx, &ops.CheckpointOp{Op: ops.CheckpointImport, Name: name, In: r}, nil)
	if err != nil {
		return ops.CheckpointInfo{}, err
	}
	return *res.Checkpoint, nil
}
