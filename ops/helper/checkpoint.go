package helper

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

var _ ops.CheckpointFS = (*Client)(nil)

const (
	// MaxCheckpointReply bounds a checkpoint reply line (a list, the
	// changes of a diff).
	MaxCheckpointReply = 64 << 20
	// MaxCheckpointText bounds a patch or stat taken from the target.
	MaxCheckpointText = 1 << 30
)

// Checkpoint runs a checkpoint operation in the target: the helper walks,
// hashes and copies there; only the outcome (and a patch or stat, to out)
// comes back.
func (cl *Client) Checkpoint(ctx context.Context, op *ops.CheckpointOp, out io.Writer) (*ops.CheckpointResult, error) {
	c := cl.c
	s, err := c.session(ctx)
	if err != nil {
		return nil, err
	}
	if err := c.acquire(ctx); err != nil {
		return nil, err
	}
	defer c.release()
	body, _ := json.Marshal(proto.CheckpointRequest{Op: op.Op, Store: proto.Str(op.Store), Root: proto.Str(op.Root), Name: proto.Str(op.Name), Exclude: proto.Strs(op.Exclude), Ref: proto.Str(op.Ref), To: proto.Str(op.To), Auto: op.Auto, Call: proto.Str(op.Call), Limit: op.StoreLimit, Freeze: op.Freeze})
	var req io.Reader = bytes.NewReader(body)
	if op.Op == ops.CheckpointImport && op.In != nil {
		req = io.MultiReader(req, op.In)
	}
	resp, err := s.roundTrip(ctx, c, proto.PathCheckpoint, "", req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, c.errorf("%w", replyError(resp, nil))
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	line, err := readLine(br, MaxCheckpointReply)
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, s.lost(c, err)
	}
	var rep proto.CheckpointReply
	if err := json.Unmarshal(line, &rep); err != nil {
		return nil, s.lost(c, fmt.Errorf("checkpoint reply: %w", err))
	}
	if rep.Error != nil {
		msg := proto.ClipText(rep.Error.Msg)
		switch rep.ErrKind {
		case "none":
			return nil, fmt.Errorf("%w: %s", ops.ErrNoCheckpoint, msg)
		case "unknown":
			return nil, fmt.Errorf("%w: %s", ops.ErrUnknownCheckpoint, msg)
		case "config":
			return nil, fmt.Errorf("%w: %s", ops.ErrConfig, msg)
		case "unsupported":
			return nil, fmt.Errorf("%w: %s", ops.ErrUnsupported, msg)
		}
		return nil, errors.New(msg)
	}
	if out != nil {
		// A patch or stat is bounded by MaxCheckpointText, an export by
		// the size its reply line announced.
		limit := int64(MaxCheckpointText)
		if op.Op == ops.CheckpointExport {
			limit = rep.Size
		}
		n, err := io.Copy(out, io.LimitReader(br, limit+1))
		if err != nil {
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			return nil, c.errorf("checkpoint: the %s broke off: %w", op.Op, err)
		}
		if n > limit {
			return nil, c.errorf("checkpoint: the %s is over %d bytes, the bound it announced: cut", op.Op, limit)
		}
	}
	res := &ops.CheckpointResult{Size: rep.Size, Frozen: rep.Frozen, Checkpoint: oinfo(rep.Checkpoint), Pre: oinfo(rep.Pre), Skipped: proto.Strings(rep.Skipped), From: oinfo(rep.From), To: oinfo(rep.To)}
	for _, i := range rep.List {
		res.List = append(res.List, *oinfo(&i))
	}
	for _, ch := range rep.Changes {
		res.Changes = append(res.Changes, ops.CheckpointChange{Path: string(ch.Path), Status: ch.Status, What: ch.What, Old: oentry(ch.Old), New: oentry(ch.New)})
	}
	return res, nil
}

// readLine reads one line of at most max bytes.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > max {
			return nil, &LimitError{What: "checkpoint reply", Limit: fmt.Sprintf("%d MiB", max>>20)}
		}
		if err == nil {
			return line, nil
		}
		if err != bufio.ErrBufferFull {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
}

func oinfo(c *proto.CheckpointInfo) *ops.CheckpointInfo {
	if c == nil {
		return nil
	}
	return &ops.CheckpointInfo{ID: c.ID, Name: string(c.Name), Time: time.Unix(0, c.Time).UTC(), Files: c.Files, Bytes: c.Bytes, Exclude: proto.Strings(c.Exclude), Auto: c.Auto, Call: string(c.Call)}
}

func oentry(e *proto.CheckpointEntry) *ops.CheckpointEntry {
	if e == nil {
		return nil
	}
	return &ops.CheckpointEntry{Type: e.Type, Mode: e.Mode, Size: e.Size, Link: string(e.Link)}
}
