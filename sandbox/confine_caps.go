package sandbox

import (
	"context"
	"io"
	"io/fs"
	"path"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// The check-then-use view keeps every optional capability of its backend
// (ops.ErrUnsupported where the backend lacks it), each path checked as the
// steps it stands for would be.
var (
	_ ops.ReplaceFS         = (*confined)(nil)
	_ ops.WriteParentsFS    = (*confined)(nil)
	_ ops.CheckedOpenFS     = (*confined)(nil)
	_ ops.ListFS            = (*confined)(nil)
	_ ops.SpillRunner       = (*confined)(nil)
	_ ops.DirCheckingRunner = (*confined)(nil)
)

// ReplaceFile keeps an edit's read-modify-write one locked call in the
// target.
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

// WriteFileParents: the parents made lead to name's resolved path, so they
// are under its root.
func (c *confined) WriteFileParents(ctx context.Context, name string, data []byte, perm fs.FileMode) error {
	w, ok := c.b.(ops.WriteParentsFS)
	if !ok {
		return ops.ErrUnsupported
	}
	if err := c.check(ctx, name, true, true); err != nil {
		return err
	}
	return w.WriteFileParents(ctx, name, data, perm)
}

func (c *confined) OpenChecked(ctx context.Context, name string, mode ops.AccessMode) (fs.FileInfo, io.ReadCloser, error) {
	co, ok := c.b.(ops.CheckedOpenFS)
	if !ok {
		return nil, nil, ops.ErrUnsupported
	}
	if err := c.check(ctx, name, mode&ops.AccessWrite != 0, true); err != nil {
		return nil, nil, err
	}
	return co.OpenChecked(ctx, name, mode)
}

// ListDir checks each entry as the Stat of it would be: one that leads
// outside the roots is not OK (as the helper's confined view reports it).
func (c *confined) ListDir(ctx context.Context, name string) (fs.FileInfo, []ops.ListEntry, error) {
	l, ok := c.b.(ops.ListFS)
	if !ok {
		return nil, nil, ops.ErrUnsupported
	}
	if err := c.check(ctx, name, false, true); err != nil {
		return nil, nil, err
	}
	fi, es, err := l.ListDir(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	for i := range es {
		if es[i].OK && c.check(ctx, path.Join(name, es[i].Name), false, true) != nil {
			es[i] = ops.ListEntry{Name: es[i].Name}
		}
	}
	return fi, es, nil
}

// RunSpill checks the directory as Run does, and the spill file as a
// write.
func (c *confined) RunSpill(ctx context.Context, cmd *ops.Cmd, s *ops.Spill) error {
	sr, ok := c.b.(ops.SpillRunner)
	if !ok {
		return ops.ErrUnsupported
	}
	if err := c.check(ctx, s.Path, true, true); err != nil {
		return ops.ErrUnsupported // nothing ran: the caller saves the output
	}
	if err := c.checkDir(ctx, cmd); err != nil {
		return err
	}
	return sr.RunSpill(ctx, cmd, s)
}

// ChecksDir is the backend's: Run's own check of the directory against the
// roots comes first, and the backend's check in its round trip follows.
func (c *confined) ChecksDir() bool {
	dc, ok := c.b.(ops.DirCheckingRunner)
	return ok && dc.ChecksDir()
}
