package shim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/checkpoint"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/native"
	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

// handleCheckpoint runs one checkpoint operation on the target's files
// (package checkpoint): walking, hashing and copying happen here, only
// the outcome (and a patch or stat) goes back.
func (s *server) handleCheckpoint(w http.ResponseWriter, r *http.Request) {
	if s.backend(w) == nil {
		return
	}
	// The request is one JSON value; an import's tar follows it.
	var req proto.CheckpointRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<20))
	if err := dec.Decode(&req); err != nil {
		replyErr(w, fmt.Errorf("shim: bad request: %w", err))
		return
	}
	op := &ops.CheckpointOp{Op: req.Op, Store: string(req.Store), Root: string(req.Root), Name: string(req.Name), Exclude: proto.Strings(req.Exclude), Ref: string(req.Ref), To: string(req.To), Auto: req.Auto, Call: string(req.Call), StoreLimit: req.Limit, Freeze: req.Freeze}
	if op.Op == ops.CheckpointImport {
		op.In = io.MultiReader(dec.Buffered(), r.Body)
	}
	tw := &textWriter{w: w}
	res, err := checkpoint.DoFrozen(op, tw, native.Freeze)
	if err != nil && tw.started {
		panic(http.ErrAbortHandler) // the client sees a broken stream, not a short patch
	}
	if !tw.started {
		w.WriteHeader(http.StatusOK)
		json.NewEncoder(w).Encode(checkpointReply(res, err))
	}
}

// textWriter sends the reply line (success: "{}", or the result an
// export announced) before the first text.
type textWriter struct {
	w       http.ResponseWriter
	head    []byte
	started bool
}

func (t *textWriter) Head(res *ops.CheckpointResult) {
	t.head, _ = json.Marshal(checkpointReply(res, nil))
}

func (t *textWriter) Write(p []byte) (int, error) {
	if !t.started {
		t.started = true
		t.w.WriteHeader(http.StatusOK)
		head := t.head
		if head == nil {
			head = []byte("{}")
		}
		if _, err := t.w.Write(append(head, '\n')); err != nil {
			return 0, err
		}
	}
	return t.w.Write(p)
}

// checkpointReply encodes an operation's outcome.
func checkpointReply(res *ops.CheckpointResult, err error) proto.CheckpointReply {
	var rep proto.CheckpointReply
	if err != nil {
		rep.Error = &proto.Error{Kind: "other", Msg: err.Error()}
		switch {
		case errors.Is(err, ops.ErrNoCheckpoint):
			rep.ErrKind = "none"
		case errors.Is(err, ops.ErrUnknownCheckpoint):
			rep.ErrKind = "unknown"
		case errors.Is(err, ops.ErrConfig):
			rep.ErrKind = "config"
		case errors.Is(err, ops.ErrUnsupported):
			rep.ErrKind = "unsupported"
		}
		return rep
	}
	rep.Checkpoint, rep.Pre, rep.From, rep.To = pinfo(res.Checkpoint), pinfo(res.Pre), pinfo(res.From), pinfo(res.To)
	rep.Skipped, rep.Size, rep.Frozen = proto.Strs(res.Skipped), res.Size, res.Frozen
	for _, c := range res.List {
		rep.List = append(rep.List, *pinfo(&c))
	}
	for _, c := range res.Changes {
		rep.Changes = append(rep.Changes, proto.CheckpointChange{Path: proto.Str(c.Path), Status: c.Status, What: c.What, Old: pentry(c.Old), New: pentry(c.New)})
	}
	return rep
}

func pinfo(c *ops.CheckpointInfo) *proto.CheckpointInfo {
	if c == nil {
		return nil
	}
	return &proto.CheckpointInfo{ID: c.ID, Name: proto.Str(c.Name), Time: c.Time.UnixNano(), Files: c.Files, Bytes: c.Bytes, Exclude: proto.Strs(c.Exclude), Auto: c.Auto, Call: proto.Str(c.Call)}
}

func pentry(e *ops.CheckpointEntry) *proto.CheckpointEntry {
	if e == nil {
		return nil
	}
	return &proto.CheckpointEntry{Type: e.Type, Mode: e.Mode, Size: e.Size, Link: proto.Str(e.Link)}
}
