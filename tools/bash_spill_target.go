package tools

import (
	"bytes"
	"context"
	"errors"
	"strconv"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// targetHeldMax bounds what a targetSpill keeps of the output: enough for
// the one case where the runner does not create the file although the tool
// spills (an output short in bytes that decoding made long: the runner
// counts raw bytes), which is at most defaultMaxBytes plus a chunk.
const targetHeldMax = 2*defaultMaxBytes + 64<<10

// spillHandle is a spill file as bashStream sees it.
type spillHandle interface {
	spillSink
	// close ends the file once the command ended and returns the first
	// error (the file is missing or incomplete).
	close() error
	// opened reports whether the file exists (valid after close).
	opened() bool
}

// targetSpill is the spill file the runner saves in the target as the
// command runs (ops.SpillRunner): the output is not sent back there. The
// tool only holds the first bytes, in case it must write the file itself.
type targetSpill struct {
	ctx   context.Context
	fsys  ops.FS
	limit int64
	total int64
	s     *ops.Spill

	held      [][]byte
	heldBytes int
	over      bool
	wrote     *spillFile // the tool wrote the file itself
}

// newTargetSpill describes the spill file for a runner to save: created
// once the output passes what bash shows, capped at limit with
// spillFile's note.
func newTargetSpill(ctx context.Context, fsys ops.FS, dir string, limit, total int64) *targetSpill {
	return &targetSpill{ctx: ctx, fsys: fsys, limit: limit, total: total, s: &ops.Spill{
		Path:       spillName(dir),
		AfterBytes: defaultMaxBytes,
		AfterLines: defaultMaxLines,
		Cap:        limit,
		CapNote:    capNote(limit),
		Total:      total,
		// Past the structured output's head, only the last part of a long
		// output (more than the structured tail and the rolling tail
		// need) comes back, with the counts of the rest.
		Skip:      true,
		SkipAfter: 2 * structuredCap,
		SkipHold:  structuredCap,
	}}
}

func (t *targetSpill) path() string { return t.s.Path }

func (t *targetSpill) write(p []byte) {
	if t.over || len(p) == 0 {
		return
	}
	if t.heldBytes+len(p) > targetHeldMax {
		t.over, t.held = true, nil
		return
	}
	t.held = append(t.held, bytes.Clone(p))
	t.heldBytes += len(p)
}

func (t *targetSpill) close() error {
	if t.s.Created {
		t.held = nil
		return t.s.Err
	}
	if !t.over && t.s.Err == nil {
		// The runner did not need the file: write what is held.
		f := startSpillAt(t.ctx, t.fsys, t.s.Path, t.limit, t.total)
		for _, p := range t.held {
			f.write(p)
		}
		t.held = nil
		t.wrote = f
		return f.close()
	}
	if t.s.Err != nil {
		return t.s.Err
	}
	return errors.New("the runner did not save it")
}

func (t *targetSpill) opened() bool {
	if t.wrote != nil {
		return t.wrote.opened()
	}
	return t.s.Created
}

// capNote ends a spill file capped at limit bytes.
func capNote(limit int64) string {
	return "\n[pi-sandbox: output after the first " + strconv.FormatInt(limit, 10) + " bytes was not saved]\n"
}
