package tools

import (
	"context"
	"encoding/json"
	"path"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

const writeDescription = "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. Automatically creates parent directories."

var writeSchema = objectSchema(
	stringParam("path", "Path to the file to write (relative or absolute)", true),
	stringParam("content", "Content to write to the file", true),
)

type writeTool struct {
	fsys ops.FS
	info ops.Info
	q    *MutationQueue
}

// NewWrite returns pi's write tool on fsys. Writes go through q, shared with
// edit, so calls on one file run in order.
func NewWrite(fsys ops.FS, info ops.Info, q *MutationQueue) loop.Tool {
	return &writeTool{fsys: fsys, info: info, q: q}
}

func (*writeTool) Name() string                { return "write" }
func (*writeTool) Label() string               { return "write" }
func (*writeTool) Description() string         { return writeDescription }
func (*writeTool) Parameters() json.RawMessage { return writeSchema }
func (*writeTool) Mode() loop.Mode             { return loop.Parallel }

// StartOrdered makes the loop start a batch's edit and write calls in
// source order, so they enter the mutation queue in that order.
func (*writeTool) StartOrdered() {}

type writeArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

func (t *writeTool) Execute(ctx context.Context, _ string, args map[string]any, _ loop.UpdateFunc) (*loop.Result, error) {
	var a writeArgs
	if err := loop.DecodeArgs(args, &a); err != nil {
		return nil, err
	}
	abs := resolveToCwd(a.Path, t.info.WorkDir, t.info.Home)
	// mkdir and the check of an existing target end with ctx; the write
	// itself runs to completion even when ctx is done (or until settleGrace
	// after it), so an aborted write releases the queue only once its write
	// settled; the abort is checked between the steps (pi's contract: the
	// file may be written and the call still report "Operation aborted").
	data := []byte(a.Content)
	err := t.q.Do(ctx, abs, func() error {
		if err := checkAbort(ctx); err != nil {
			return err
		}
		// One round trip where the backend has it; on any failure the
		// steps below run one by one, which says which one failed.
		if wp, ok := t.fsys.(ops.WriteParentsFS); ok {
			wctx, stop := settleCtx(ctx)
			err := wp.WriteFileParents(wctx, abs, data, 0o644)
			stop()
			if err == nil {
				t.q.memo.put(abs, data)
				return checkAbort(ctx)
			}
			if err := checkAbort(ctx); err != nil {
				return err
			}
		}
		dir := path.Dir(abs)
		if err := t.fsys.MkdirAll(ctx, dir, 0o755); err != nil {
			if err := checkAbort(ctx); err != nil {
				return err
			}
			return mkdirErr(ctx, t.fsys, err, dir)
		}
		if err := checkAbort(ctx); err != nil {
			return err
		}
		// Writing to a FIFO or a device would never end (or fill a disk):
		// only regular files are replaced.
		if fi, err := t.fsys.Stat(ctx, abs); err == nil {
			if kind := irregularKind(fi); kind != "" {
				return errNotRegular("write", a.Path, kind)
			}
		} else if err := checkAbort(ctx); err != nil {
			return err
		}
		wctx, stop := settleCtx(ctx)
		defer stop()
		if err := t.fsys.WriteFile(wctx, abs, data, 0o644); err != nil {
			t.q.memo.drop(abs)
			return nodeErr(err, "open", abs)
		}
		t.q.memo.put(abs, data)
		return checkAbort(ctx)
	})
	if err != nil {
		return nil, err
	}
	return loop.TextResult("Successfully wrote to "+a.Path, nil), nil
}

// mkdirErr is Node's text for a failed recursive mkdir: when dir itself is
// an existing non-directory Node says EEXIST, where backends (like
// os.MkdirAll) say ENOTDIR.
func mkdirErr(ctx context.Context, fsys ops.FS, err error, dir string) error {
	if ops.ErrnoOf(err) == ops.ENOTDIR {
		if fi, serr := fsys.Stat(ctx, dir); serr == nil && !fi.IsDir() {
			return textErr(nodeError(ops.PathError("mkdir", dir, ops.EEXIST), "mkdir", dir), err)
		}
	}
	return nodeErr(err, "mkdir", dir)
}
