package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"time"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

// The edit tool (pi 1.6).

const editDescription = "Edit a single file using exact text replacement. Every edits[].oldText must match a unique, non-overlapping region of the original file. If two changes affect the same block or nearby lines, merge them into one edit instead of emitting overlapping edits. Do not include large unchanged regions just to connect distant changes."

var editSchema = objectSchema(
	stringParam("path", "Path to the file to edit (relative or absolute)", true),
	rawParam("edits", editsSchema(), true),
)

func editsSchema() json.RawMessage {
	item := objectSchema(
		stringParam("oldText", "Exact text for one targeted replacement. It must be unique in the original file and must not overlap with any other edits[].oldText in the same call.", true),
		stringParam("newText", "Replacement text for this targeted edit.", true),
	)
	b, _ := loop.MarshalNoEscape(struct {
		Type        string          `json:"type"`
		Items       json.RawMessage `json:"items"`
		Description string          `json:"description"`
	}{"array", item, "One or more targeted replacements. Each edit is matched against the original file, not incrementally. Do not include overlapping or nested edits. If two changes touch the same block or nearby lines, merge them into one edit instead."})
	return b
}

var errEditNoEdits = errors.New("Edit tool input is invalid. edits must contain at least one replacement.")

type editTool struct {
	fsys ops.FS
	info ops.Info
	q    *MutationQueue
}

var (
	_ loop.Tool             = (*editTool)(nil)
	_ loop.ArgumentPreparer = (*editTool)(nil)
	_ loop.StartOrdered     = (*editTool)(nil)
)

// NewEdit returns pi's edit tool on fsys. Paths resolve against
// info.WorkDir and info.Home; writes go through q, which edit shares with
// write.
func NewEdit(fsys ops.FS, info ops.Info, q *MutationQueue) loop.Tool {
	return &editTool{fsys: fsys, info: info, q: q}
}

func (*editTool) Name() string                { return "edit" }
func (*editTool) Label() string               { return "edit" }
func (*editTool) Description() string         { return editDescription }
func (*editTool) Parameters() json.RawMessage { return editSchema }
func (*editTool) Mode() loop.Mode             { return loop.Parallel }

// StartOrdered makes the loop start a batch's edit and write calls in
// source order, so they enter the mutation queue in that order.
func (*editTool) StartOrdered() {}

// PrepareArguments folds edit's legacy argument forms into edits (§7.1): an
// edits JSON string, a single edits object, and top-level oldText/newText.
// A valid input is returned as the same map.
func (*editTool) PrepareArguments(raw any) any {
	m, ok := raw.(map[string]any)
	if !ok {
		return raw
	}
	switch e := m["edits"].(type) {
	case string:
		var parsed any
		if json.Unmarshal([]byte(e), &parsed) == nil {
			switch p := parsed.(type) {
			case []any:
				m["edits"] = p
			case map[string]any:
				if isEditObject(p) {
					m["edits"] = []any{p}
				}
			}
		}
	case map[string]any:
		if isEditObject(e) {
			m["edits"] = []any{e}
		}
	}
	oldText, ok1 := m["oldText"].(string)
	newText, ok2 := m["newText"].(string)
	if !ok1 || !ok2 {
		return m
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != "oldText" && k != "newText" {
			out[k] = v
		}
	}
	edits, _ := m["edits"].([]any)
	out["edits"] = append(edits[:len(edits):len(edits)], map[string]any{"oldText": oldText, "newText": newText})
	return out
}

func isEditObject(m map[string]any) bool {
	_, ok1 := m["oldText"].(string)
	_, ok2 := m["newText"].(string)
	return ok1 && ok2
}

// Execute follows §7.2: validate, then inside the file's mutation queue
// check access, read, match, diff and write, checking for an abort between
// the I/O steps.
func (t *editTool) Execute(ctx context.Context, _ string, args map[string]any, _ loop.UpdateFunc) (*loop.Result, error) {
	list, ok := args["edits"].([]any)
	if !ok || len(list) == 0 {
		return nil, errEditNoEdits
	}
	var in struct {
		Path  string     `json:"path"`
		Edits []editSpec `json:"edits"`
	}
	if err := loop.DecodeArgs(args, &in); err != nil {
		return nil, fmt.Errorf("tools: edit: %w", err)
	}
	abs := resolveToCwd(in.Path, t.info.WorkDir, t.info.Home)
	var res *loop.Result
	err := t.q.Do(ctx, abs, func() error {
		var err error
		res, err = t.edit(ctx, in.Path, abs, in.Edits)
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// edit runs with the file's queue held. Like pi (and write), it does not
// interrupt the write once it is under way: an abort is noticed between the
// steps, and a write that was under way when the abort came lands although
// the call reports "Operation aborted". A plain write is waited for (the
// queue is released once it settled, or settleGrace after the abort); a
// ReplaceFile returns at the abort: until the target's lock is held nothing
// is written, and once it is the target completes the write under that
// lock. The steps before the write (access, stat, read) end with ctx.
func (t *editTool) edit(ctx context.Context, path, abs string, edits []editSpec) (*loop.Result, error) {
	if err := checkAbort(ctx); err != nil {
		return nil, err
	}
	if orig, ok := t.q.memo.get(abs); ok {
		if res, done, err := t.editRemembered(ctx, path, abs, orig, edits); done {
			return res, err
		}
	}
	// One round trip for the access check, the stat and the read where the
	// backend can; the steps one by one otherwise, or when it failed (they
	// say exactly what failed).
	if fi, r, ok := openChecked(ctx, t.fsys, abs, ops.AccessRead|ops.AccessWrite); ok && r != nil {
		if fi.Size() > maxEditBytes {
			r.Close()
			return nil, errEditTooLarge(path, fi.Size())
		}
		return t.editLoop(ctx, path, abs, fi, r, edits)
	} else if ok {
		if kind := irregularKind(fi); kind != "" {
			return nil, errNotRegular("edit", path, kind)
		}
	}
	if err := t.fsys.Access(ctx, abs, ops.AccessRead|ops.AccessWrite); err != nil {
		if err := checkAbort(ctx); err != nil {
			return nil, err
		}
		return nil, editAccessError(path, err)
	}
	if err := checkAbort(ctx); err != nil {
		return nil, err
	}
	fi, err := t.fsys.Stat(ctx, abs)
	if err != nil {
		if err := checkAbort(ctx); err != nil {
			return nil, err
		}
		return nil, editAccessError(path, err)
	}
	if kind := irregularKind(fi); kind != "" {
		return nil, errNotRegular("edit", path, kind)
	}
	if !fi.IsDir() && fi.Size() > maxEditBytes {
		return nil, errEditTooLarge(path, fi.Size())
	}
	return t.editLoop(ctx, path, abs, fi, nil, edits)
}

// editLoop edits abs until the write lands. The read-modify-write is one
// locked compare-and-replace where the backend has it (the helper): a file
// that another session changed since the read is edited again on its new
// content, so concurrent edits of one file never lose an update silently.
// r, when not nil, is abs opened already (the first read uses it).
func (t *editTool) editLoop(ctx context.Context, path, abs string, fi fs.FileInfo, r io.ReadCloser, edits []editSpec) (*loop.Result, error) {
	for attempt := 1; ; attempt++ {
		res, err := t.editOnce(ctx, path, abs, fi.Size(), r, edits)
		r = nil
		if errors.Is(err, ops.ErrConflict) && attempt < maxEditAttempts {
			// Sessions that keep colliding drift apart: a random pause
			// that grows with the attempts (to 20 ms).
			if err := sleepCtx(ctx, time.Duration(rand.Int64N(int64(min(attempt, 10))*int64(2*time.Millisecond)))); err != nil {
				return nil, checkAbort(ctx)
			}
			if fi, err = t.fsys.Stat(ctx, abs); err != nil {
				return nil, editAccessError(path, err)
			}
			continue
		}
		if errors.Is(err, ops.ErrConflict) {
			return nil, fmt.Errorf("Could not edit file: %s. It kept changing while being edited (%d attempts); try again", path, attempt)
		}
		return res, err
	}
}

// editRemembered edits orig, what abs was last seen to hold (contentMemo),
// in one round trip: ReplaceFile writes the result only if the file still
// holds exactly orig, which makes the edit the one a fresh read would have
// given. done is false when the edit is to be done the usual way (the file
// changed, the edits do not apply to orig, any failure); nothing was
// written then.
func (t *editTool) editRemembered(ctx context.Context, path, abs string, orig []byte, edits []editSpec) (res *loop.Result, done bool, err error) {
	rf, ok := t.fsys.(ops.ReplaceFS)
	if !ok {
		return nil, false, nil
	}
	out, details, err := planEdit(orig, edits, path)
	if err != nil || checkAbort(ctx) != nil {
		return nil, false, nil
	}
	err = rf.ReplaceFile(ctx, abs, orig, out)
	if err != nil {
		t.q.memo.drop(abs)
		if err := checkAbort(ctx); err != nil {
			return nil, true, err
		}
		var le *ops.LockedError
		if errors.As(err, &le) {
			return nil, true, errEditLocked(path, le, err)
		}
		return nil, false, nil
	}
	t.q.memo.put(abs, out)
	if err := checkAbort(ctx); err != nil {
		return nil, true, err
	}
	return editResult(path, edits, details), true, nil
}

// planEdit applies edits to orig, the file's content: what to write (its
// BOM and line endings kept) and pi's details, which 1.6 computes before
// writing.
func planEdit(orig []byte, edits []editSpec, path string) ([]byte, editDetails, error) {
	bom, content := stripBOM(decodeString(orig))
	applied, err := applyEdits(normalizeToLF(content), edits, path)
	if err != nil {
		return nil, editDetails{}, err
	}
	details := computeEditDetails(path, applied.base, applied.newText, applied.reps)
	return []byte(bom + restoreLineEndings(content, applied.reps)), details, nil
}

// editResult is pi's success result.
func editResult(path string, edits []editSpec, details editDetails) *loop.Result {
	return loop.TextResult(fmt.Sprintf("Successfully replaced %d block(s) in %s.", len(edits), path), details)
}

// maxEditAttempts bounds the re-edits of a file that keeps changing. A
// session that edits the file in a burst (one round trip an edit) wins
// every race against a re-edit (a stat, a read and a replace), so the
// bound must outlast such a burst: with the pauses between attempts (at
// most 20 ms each) 64 attempts wait about a second in the worst case.
const maxEditAttempts = 64

// editOnce reads, edits and writes abs once; ops.ErrConflict (from
// ReplaceFile) means the file changed since the read.
func (t *editTool) editOnce(ctx context.Context, path, abs string, size int64, r io.ReadCloser, edits []editSpec) (*loop.Result, error) {
	data, err := readBounded(ctx, t.fsys, abs, r, size, maxEditBytes)
	if err != nil {
		if err := checkAbort(ctx); err != nil {
			return nil, err
		}
		var big *tooLargeError
		if errors.As(err, &big) {
			return nil, errEditTooLarge(path, big.size)
		}
		if ops.ErrnoOf(err) == ops.EISDIR {
			return nil, textErr(nodeErrorNoPath(err, "read"), err)
		}
		return nil, nodeErr(err, "open", abs)
	}
	if err := checkAbort(ctx); err != nil {
		return nil, err
	}

	out, details, err := planEdit(data, edits, path)
	if err != nil {
		return nil, err
	}
	if err := checkAbort(ctx); err != nil {
		return nil, err
	}
	if err := t.write(ctx, abs, data, out); err != nil {
		if err := checkAbort(ctx); err != nil {
			return nil, err
		}
		if errors.Is(err, ops.ErrConflict) {
			return nil, err
		}
		var le *ops.LockedError
		if errors.As(err, &le) {
			return nil, errEditLocked(path, le, err)
		}
		return nil, nodeErr(err, "open", abs)
	}
	t.q.memo.put(abs, out)
	if err := checkAbort(ctx); err != nil {
		return nil, err
	}
	return editResult(path, edits, details), nil
}

// editAccessError is pi's "Could not edit file: <path>. <reason>." where the
// reason is "Error code: <CODE>" for an error with a code, else the error's
// JavaScript string form ("Error: <message>").
func editAccessError(path string, err error) error {
	reason := "Error: " + err.Error()
	if code, ok := errnoOf(err); ok {
		reason = "Error code: " + code.Code()
	}
	return textErr("Could not edit file: "+path+". "+reason+".", err)
}

// write replaces abs with data if it still holds orig (ops.ReplaceFS), else
// writes it atomically. ReplaceFile gets ctx: an abort ends its wait for the
// target's lock, and a write it has begun lands in the target all the same.
// A plain write must settle (settleCtx).
func (t *editTool) write(ctx context.Context, abs string, orig, data []byte) error {
	if r, ok := t.fsys.(ops.ReplaceFS); ok {
		err := r.ReplaceFile(ctx, abs, orig, data)
		if !errors.Is(err, ops.ErrUnsupported) {
			return err
		}
	}
	wctx, stop := settleCtx(ctx)
	defer stop()
	return t.fsys.WriteFile(wctx, abs, data, 0o666)
}

// errEditLocked is edit's error when the target's lock on the file's
// directory stayed held by another process.
func errEditLocked(path string, le *ops.LockedError, err error) error {
	return textErr("Could not edit file: "+path+". could not lock "+le.Dir+": held by another process (an exclusive flock on the directory); the file was not changed. Try again once that process has released the lock.", err)
}

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
