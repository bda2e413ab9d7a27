package sandbox

import (
	"context"
	"io"
	"io/fs"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// The wrappers keep ops.ReplaceFS: an edit's read-modify-write stays one
// locked call in the target.
var (
	_ ops.ReplaceFS = (*envBackend)(nil)
	_ ops.ReplaceFS = (*confined)(nil)
)

func (rb *redactBackend) ReplaceFile(ctx context.Context, name string, old, data []byte) error {
	if r, ok := rb.Backend.(ops.ReplaceFS); ok {
		return r.ReplaceFile(ctx, name, old, data)
	}
	return ops.ErrUnsupported
}

func (e *envBackend) ReplaceFile(ctx context.Context, name string, old, data []byte) error {
	if r, ok := e.Backend.(ops.ReplaceFS); ok {
		return r.ReplaceFile(ctx, name, old, data)
	}
	return ops.ErrUnsupported
}

func (c *confined) ReplaceFile(ctx context.Context, name string, old, data []byte) error {
	r, ok := c.b.(ops.ReplaceFS)
	if !ok {
		return ops.ErrUnsupported
	}
	if err := c.check(ctx, name, true, true); err != nil {
		return err
	}
	return r.ReplaceFile(ctx, name, old, data)
}

// And ops.WriteParentsFS: a write is one round trip. The check-before-use
// view (confined) takes the steps one by one, each checked.
var (
	_ ops.WriteParentsFS = (*envBackend)(nil)
	_ ops.WriteParentsFS = (*redactBackend)(nil)
)

func writeFileParents(b ops.Backend, ctx context.Context, name string, data []byte, perm fs.FileMode) error {
	if w, ok := b.(ops.WriteParentsFS); ok {
		return w.WriteFileParents(ctx, name, data, perm)
	}
	return ops.ErrUnsupported
}

func (rb *redactBackend) WriteFileParents(ctx context.Context, name string, data []byte, perm fs.FileMode) error {
	return writeFileParents(rb.Backend, ctx, name, data, perm)
}

func (e *envBackend) WriteFileParents(ctx context.Context, name string, data []byte, perm fs.FileMode) error {
	return writeFileParents(e.Backend, ctx, name, data, perm)
}

// They keep ops.CheckedOpenFS and ops.DirCheckingRunner too: a read is one
// round trip, a command needs no Stat of its directory first.
var (
	_ ops.CheckedOpenFS     = (*envBackend)(nil)
	_ ops.CheckedOpenFS     = (*redactBackend)(nil)
	_ ops.DirCheckingRunner = (*envBackend)(nil)
	_ ops.DirCheckingRunner = (*redactBackend)(nil)
)

func openChecked(b ops.Backend, ctx context.Context, name string, mode ops.AccessMode) (fs.FileInfo, io.ReadCloser, error) {
	if co, ok := b.(ops.CheckedOpenFS); ok {
		return co.OpenChecked(ctx, name, mode)
	}
	return nil, nil, ops.ErrUnsupported
}

func checksDir(b ops.Backend) bool {
	dc, ok := b.(ops.DirCheckingRunner)
	return ok && dc.ChecksDir()
}

func (rb *redactBackend) OpenChecked(ctx context.Context, name string, mode ops.AccessMode) (fs.FileInfo, io.ReadCloser, error) {
	return openChecked(rb.Backend, ctx, name, mode)
}

func (e *envBackend) OpenChecked(ctx context.Context, name string, mode ops.AccessMode) (fs.FileInfo, io.ReadCloser, error) {
	return openChecked(e.Backend, ctx, name, mode)
}

func (rb *redactBackend) ChecksDir() bool { return checksDir(rb.Backend) }
func (e *envBackend) ChecksDir() bool     { return checksDir(e.Backend) }

// And ops.SpillRunner, where the output the tool sees is the output saved:
// not under streamed redaction (the file would hold what the tool never
// saw), not with a replaced base environment (RunBaseEnv has no spill).
var (
	_ ops.SpillRunner = (*envBackend)(nil)
	_ ops.SpillRunner = (*redactBackend)(nil)
)

func (rb *redactBackend) RunSpill(ctx context.Context, cmd *ops.Cmd, s *ops.Spill) error {
	sr, ok := rb.Backend.(ops.SpillRunner)
	if !ok || streamRedaction(ctx) != nil {
		return ops.ErrUnsupported
	}
	return sr.RunSpill(ctx, cmd, s)
}

func (e *envBackend) RunSpill(ctx context.Context, cmd *ops.Cmd, s *ops.Spill) error {
	sr, ok := e.Backend.(ops.SpillRunner)
	if !ok || e.hr != nil {
		return ops.ErrUnsupported
	}
	c := *cmd
	c.Env = append(append([]string{}, e.env...), cmd.Env...)
	return sr.RunSpill(ctx, &c, s)
}

// And ops.ListFS: ls is one round trip.
var (
	_ ops.ListFS = (*envBackend)(nil)
	_ ops.ListFS = (*redactBackend)(nil)
)

func listDir(b ops.Backend, ctx context.Context, name string) (fs.FileInfo, []ops.ListEntry, error) {
	if l, ok := b.(ops.ListFS); ok {
		return l.ListDir(ctx, name)
	}
	return nil, nil, ops.ErrUnsupported
}

func (rb *redactBackend) ListDir(ctx context.Context, name string) (fs.FileInfo, []ops.ListEntry, error) {
	return listDir(rb.Backend, ctx, name)
}

func (e *envBackend) ListDir(ctx context.Context, name string) (fs.FileInfo, []ops.ListEntry, error) {
	return listDir(e.Backend, ctx, name)
}
