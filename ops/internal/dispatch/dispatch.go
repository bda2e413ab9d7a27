// Package dispatch forwards a backend's operations to its in-target helper
// when the helper runs, else to the backend's fallback (docker: one exec per
// operation, ops/internal/execops; ssh: SFTP and one session per command).
// A backend embeds a [Dispatcher] and overrides what it treats specially
// (docker's Run notes a paused container, ssh's Run checks the environment
// names first).
package dispatch

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/helper"
)

// Ops is what both sides offer: the file system, commands, line counts in
// the target and the searches (an ops.Backend without Info and Close).
type Ops interface {
	ops.FS
	ops.Runner
	CountLines(ctx context.Context, name string) (newlines, size int64, err error)
	Grep(ctx context.Context, q *ops.GrepQuery, fn func(ops.GrepEvent) error) error
	Find(ctx context.Context, q *ops.FindQuery, fn func(rel string) error) error
}

// Helper is what only the helper offers as well (*helper.Client).
type Helper interface {
	Ops
	ReplaceFile(ctx context.Context, name string, old, data []byte) error
	WriteFileParents(ctx context.Context, name string, data []byte, perm fs.FileMode) error
	OpenChecked(ctx context.Context, name string, mode ops.AccessMode) (fs.FileInfo, io.ReadCloser, error)
	ListDir(ctx context.Context, name string) (fs.FileInfo, []ops.ListEntry, error)
	RunSpill(ctx context.Context, cmd *ops.Cmd, s *ops.Spill) error
	ChecksDir() bool
	Processes(ctx context.Context) ([]ops.Process, error)
	Confine(ctx context.Context, roots []ops.Root) (ops.Backend, error)
	DialTarget(ctx context.Context, port int) (net.Conn, error)
	Checkpoint(ctx context.Context, op *ops.CheckpointOp, out io.Writer) (*ops.CheckpointResult, error)
	ListenTarget(ctx context.Context) (net.Listener, error)
}

var _ Helper = (*helper.Client)(nil)

// Dispatcher implements the operations of ops.Backend (but Info and Close)
// and every optional capability: ops.GrepFS, ops.FindFS, ops.LineCountFS,
// ops.ReplaceFS, ops.WriteParentsFS, ops.CheckedOpenFS, ops.ListFS,
// ops.SpillRunner, ops.DirCheckingRunner, ops.ProcessLister,
// ops.Confiner, ops.TargetDialer, ops.CheckpointFS and ops.TargetListener. What only the helper offers is ops.ErrUnsupported (or
// false) without it.
type Dispatcher struct {
	// Helper returns the running helper, nil (an untyped nil) without one.
	Helper func() Helper
	// Fallback serves without a helper.
	Fallback Ops
	// Owner is the backend: a confined view keeps its Info and Close.
	Owner interface {
		Info() ops.Info
		Close() error
	}
}

// pick returns the side that serves.
func (d *Dispatcher) pick() Ops {
	if h := d.helper(); h != nil {
		return h
	}
	return d.Fallback
}

func (d *Dispatcher) helper() Helper {
	if d.Helper == nil {
		return nil
	}
	return d.Helper()
}

func (d *Dispatcher) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	return d.pick().Open(ctx, name)
}

func (d *Dispatcher) OpenWriter(ctx context.Context, name string, flag int, perm fs.FileMode) (io.WriteCloser, error) {
	return d.pick().OpenWriter(ctx, name, flag, perm)
}

func (d *Dispatcher) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	return d.pick().Stat(ctx, name)
}

func (d *Dispatcher) Lstat(ctx context.Context, name string) (fs.FileInfo, error) {
	return d.pick().Lstat(ctx, name)
}

func (d *Dispatcher) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	return d.pick().ReadDir(ctx, name)
}

func (d *Dispatcher) WriteFile(ctx context.Context, name string, data []byte, perm fs.FileMode) error {
	return d.pick().WriteFile(ctx, name, data, perm)
}

func (d *Dispatcher) MkdirAll(ctx context.Context, name string, perm fs.FileMode) error {
	return d.pick().MkdirAll(ctx, name, perm)
}

func (d *Dispatcher) RealPath(ctx context.Context, name string) (string, error) {
	return d.pick().RealPath(ctx, name)
}

func (d *Dispatcher) Access(ctx context.Context, name string, mode ops.AccessMode) error {
	return d.pick().Access(ctx, name, mode)
}

func (d *Dispatcher) Remove(ctx context.Context, name string) error {
	return d.pick().Remove(ctx, name)
}

func (d *Dispatcher) CountLines(ctx context.Context, name string) (int64, int64, error) {
	return d.pick().CountLines(ctx, name)
}

func (d *Dispatcher) Run(ctx context.Context, cmd *ops.Cmd) error {
	return d.pick().Run(ctx, cmd)
}

func (d *Dispatcher) Grep(ctx context.Context, q *ops.GrepQuery, fn func(ops.GrepEvent) error) error {
	return d.pick().Grep(ctx, q, fn)
}

func (d *Dispatcher) Find(ctx context.Context, q *ops.FindQuery, fn func(string) error) error {
	return d.pick().Find(ctx, q, fn)
}

// Processes lists the background processes the helper owns; without the
// helper there are none (they die with their command).
func (d *Dispatcher) Processes(ctx context.Context) ([]ops.Process, error) {
	if h := d.helper(); h != nil {
		return h.Processes(ctx)
	}
	return nil, nil
}

// ReplaceFile replaces under the helper's lock; without the helper,
// ops.ErrUnsupported (the caller writes the file itself).
func (d *Dispatcher) ReplaceFile(ctx context.Context, name string, old, data []byte) error {
	if h := d.helper(); h != nil {
		return h.ReplaceFile(ctx, name, old, data)
	}
	return ops.ErrUnsupported
}

// WriteFileParents writes in one round trip to the helper; without it,
// ops.ErrUnsupported (the caller takes the steps one by one).
func (d *Dispatcher) WriteFileParents(ctx context.Context, name string, data []byte, perm fs.FileMode) error {
	if h := d.helper(); h != nil {
		return h.WriteFileParents(ctx, name, data, perm)
	}
	return ops.ErrUnsupported
}

// Confine confines in the helper; without it, ops.ErrUnsupported (the
// sandbox then checks each path before the operation). The view keeps the
// owner's Info and Close.
func (d *Dispatcher) Confine(ctx context.Context, roots []ops.Root) (ops.Backend, error) {
	h := d.helper()
	if h == nil {
		return nil, ops.ErrUnsupported
	}
	v, err := h.Confine(ctx, roots)
	if err != nil {
		return nil, err
	}
	if _, ok := v.(*helper.Client); ok && d.Owner != nil {
		return helper.Owned(v, d.Owner.Info, d.Owner.Close), nil
	}
	return v, nil
}

// OpenChecked checks, stats and opens in one round trip to the helper;
// without it, ops.ErrUnsupported (the caller takes the steps one by one).
func (d *Dispatcher) OpenChecked(ctx context.Context, name string, mode ops.AccessMode) (fs.FileInfo, io.ReadCloser, error) {
	if h := d.helper(); h != nil {
		return h.OpenChecked(ctx, name, mode)
	}
	return nil, nil, ops.ErrUnsupported
}

// ListDir lists in one round trip to the helper; without it,
// ops.ErrUnsupported.
func (d *Dispatcher) ListDir(ctx context.Context, name string) (fs.FileInfo, []ops.ListEntry, error) {
	if h := d.helper(); h != nil {
		return h.ListDir(ctx, name)
	}
	return nil, nil, ops.ErrUnsupported
}

// RunSpill has the helper save the output in the target; without it,
// ops.ErrUnsupported (nothing ran: the caller saves the output).
func (d *Dispatcher) RunSpill(ctx context.Context, cmd *ops.Cmd, s *ops.Spill) error {
	if h := d.helper(); h != nil {
		return h.RunSpill(ctx, cmd, s)
	}
	return ops.ErrUnsupported
}

// ChecksDir reports whether Run checks cmd.Dir in the same round trip as
// the command: with the helper.
func (d *Dispatcher) ChecksDir() bool {
	h := d.helper()
	return h != nil && h.ChecksDir()
}

// DialTarget connects to the target's 127.0.0.1:port through the helper;
// without it, ops.ErrUnsupported.
func (d *Dispatcher) DialTarget(ctx context.Context, port int) (net.Conn, error) {
	if h := d.helper(); h != nil {
		return h.DialTarget(ctx, port)
	}
	return nil, fmt.Errorf("dial 127.0.0.1:%d: %w: connections into the target need its helper", port, ops.ErrUnsupported)
}

// Checkpoint runs a checkpoint operation in the target through the helper;
// without it, ops.ErrUnsupported.
func (d *Dispatcher) Checkpoint(ctx context.Context, op *ops.CheckpointOp, out io.Writer) (*ops.CheckpointResult, error) {
	if h := d.helper(); h != nil {
		return h.Checkpoint(ctx, op, out)
	}
	return nil, fmt.Errorf("checkpoint: %w: checkpoints are made in the target by its helper, which is not running", ops.ErrUnsupported)
}

// ListenTarget listens on the target's 127.0.0.1 through the helper;
// without it, ops.ErrUnsupported.
func (d *Dispatcher) ListenTarget(ctx context.Context) (net.Listener, error) {
	if h := d.helper(); h != nil {
		return h.ListenTarget(ctx)
	}
	return nil, fmt.Errorf("listen on the target's 127.0.0.1: %w: connections out of the target need its helper", ops.ErrUnsupported)
}
