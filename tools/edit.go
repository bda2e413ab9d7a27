package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

// The edit tool (pi-contracts §4.3 and §7, pi 1.6).

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
// steps, so the queue is released only once the write settled (or
// settleGrace after the abort), and a write that was under way when the
// abort came lands although the call reports "Operation aborted". The steps
// before the write (access, stat, read) end with ctx.
func (t *editTool) edit(ctx context.Context, path, abs string, edits []editSpec) (*loop.Result, error) {
	if err := checkAbort(ctx); err != nil {
		return nil, err
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
	// The read-modify-write is one locked compare-and-replace where the
	// backend has it (the helper): a file that another session changed
	// since the read is edited again on its new content, so concurrent
	// edits of one file never lose an update silently.
	for attempt := 1; ; attempt++ {
		res, err := t.editOnce(ctx, path, abs, fi.Size(), edits)
		if errors.Is(err, ops.ErrConflict) && attempt < maxEditAttempts {
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

// maxEditAttempts bounds the re-edits of a file that keeps changing.
const maxEditAttempts = 8

// editOnce reads, edits and writes abs once; ops.ErrConflict (from
// ReplaceFile) means the file changed since the read.
func (t *editTool) editOnce(ctx context.Context, path, abs string, size int64, edits []editSpec) (*loop.Result, error) {
	data, err := readBounded(ctx, t.fsys, abs, size, maxEditBytes)
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

	orig := data
	bom, content := stripBOM(decodeString(data))
	data = nil
	applied, err := applyEdits(normalizeToLF(content), edits, path)
	if err != nil {
		return nil, err
	}
	// 1.6 computes the details before writing.
	details := computeEditDetails(path, applied.base, applied.newText, applied.reps)

	if err := checkAbort(ctx); err != nil {
		return nil, err
	}
	out := bom + restoreLineEndings(content, applied.reps)
	wctx, stop := settleCtx(ctx)
	defer stop()
	if err := t.write(wctx, abs, orig, []byte(out)); err != nil {
		if err := checkAbort(ctx); err != nil {
			return nil, err
		}
		if errors.Is(err, ops.ErrConflict) {
			return nil, err
		}
		return nil, nodeErr(err, "open", abs)
	}
	if err := checkAbort(ctx); err != nil {
		return nil, err
	}
	return loop.TextResult(fmt.Sprintf("Successfully replaced %d block(s) in %s.", len(edits), path), details), nil
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
// writes it atomically.
func (t *editTool) write(ctx context.Context, abs string, orig, data []byte) error {
	if r, ok := t.fsys.(ops.ReplaceFS); ok {
		err := r.ReplaceFile(ctx, abs, orig, data)
		if !errors.Is(err, ops.ErrUnsupported) {
			return err
		}
	}
	return t.fsys.WriteFile(ctx, abs, data, 0o666)
}
