package checkpoint

import (
	"fmt"
	"io"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// Do runs one operation of ops.CheckpointFS on this machine's files: what
// the helper and the local backend serve.
func Do(op *ops.CheckpointOp, out io.Writer) (*ops.CheckpointResult, error) {
	if op.Store == "" {
		return nil, fmt.Errorf("checkpoint: %w: this sandbox has no state directory for checkpoints", ops.ErrUnsupported)
	}
	s, err := Open(op.Store)
	if err != nil {
		return nil, err
	}
	res := &ops.CheckpointResult{}
	if op.StoreLimit != 0 && (op.Op == ops.CheckpointCreate || op.Op == ops.CheckpointImport) {
		if err := s.SetLimit(op.StoreLimit); err != nil {
			return nil, err
		}
	}
	switch op.Op {
	case ops.CheckpointCreate:
		r, err := s.Create(op.Root, Options{Name: op.Name, Exclude: op.Exclude, Auto: op.Auto, Call: op.Call})
		if err != nil {
			return nil, err
		}
		res.Checkpoint, res.Skipped = info(r.Checkpoint), r.Skipped
	case ops.CheckpointList:
		all, err := s.List()
		if err != nil {
			return nil, err
		}
		res.List = []ops.CheckpointInfo{}
		for _, c := range all {
			res.List = append(res.List, *info(c))
		}
	case ops.CheckpointRemove:
		c, err := s.Remove(op.Ref)
		if err != nil {
			return nil, err
		}
		res.Checkpoint = info(c)
	case ops.CheckpointRestore:
		c, pre, err := s.Restore(op.Root, op.Ref)
		if err != nil {
			return nil, err
		}
		res.Checkpoint, res.Pre, res.Skipped = info(c), info(pre.Checkpoint), pre.Skipped
	case ops.CheckpointDiff:
		d, err := s.Changes(op.Root, op.Ref, op.To)
		if err != nil {
			return nil, err
		}
		fillDiff(res, d)
		res.Changes = []ops.CheckpointChange{}
		for _, c := range d.Changes {
			res.Changes = append(res.Changes, ops.CheckpointChange{Path: c.Path, Status: string(c.Status), What: c.What(), Old: entry(c.Old), New: entry(c.New)})
		}
	case ops.CheckpointPatch, ops.CheckpointStat:
		f := Patch
		if op.Op == ops.CheckpointStat {
			f = Stat
		}
		d, err := s.WriteDiff(out, op.Root, op.Ref, op.To, f)
		if err != nil {
			return nil, err
		}
		fillDiff(res, d)
	case ops.CheckpointExport:
		c, err := s.Export(out, op.Ref, func(c Checkpoint, bound int64) {
			res.Checkpoint, res.Size = info(c), bound
			if h, ok := out.(headWriter); ok {
				h.Head(res)
			}
		})
		if err != nil {
			return nil, err
		}
		res.Checkpoint = info(c)
	case ops.CheckpointImport:
		if op.In == nil {
			return nil, fmt.Errorf("checkpoint: import: no archive to read")
		}
		c, err := s.Import(op.In, op.Name)
		if err != nil {
			return nil, err
		}
		res.Checkpoint = info(c)
	default:
		return nil, fmt.Errorf("checkpoint: %w: operation %q", ops.ErrUnsupported, op.Op)
	}
	return res, nil
}

// DoFrozen is Do, but a create with op.Freeze runs between freeze and
// the function it returns (which resumes what it stopped).
func DoFrozen(op *ops.CheckpointOp, out io.Writer, freeze func() (int, func())) (*ops.CheckpointResult, error) {
	if !op.Freeze || op.Op != ops.CheckpointCreate {
		return Do(op, out)
	}
	n, thaw := freeze()
	res, err := Do(op, out)
	thaw()
	if res != nil {
		res.Frozen = n
	}
	return res, err
}

// headWriter is an out that learns the result of an export (its
// checkpoint and Size) before the archive's first byte.
type headWriter interface {
	io.Writer
	Head(*ops.CheckpointResult)
}

func fillDiff(res *ops.CheckpointResult, d Diff) {
	res.From = info(d.From)
	if d.To != nil {
		res.To = info(*d.To)
	}
}

func info(c Checkpoint) *ops.CheckpointInfo {
	return &ops.CheckpointInfo{ID: c.ID, Name: c.Name, Time: c.Time, Files: c.Files, Bytes: c.Bytes, Exclude: c.Exclude, Auto: c.Auto, Call: c.Call}
}

func entry(e *Entry) *ops.CheckpointEntry {
	if e == nil {
		return nil
	}
	return &ops.CheckpointEntry{Type: e.Type.String(), Mode: e.Mode, Size: e.Size, Link: e.Link}
}
