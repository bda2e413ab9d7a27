package shim

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"path"
	"syscall"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/savedout"
	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

// spiller saves a run's output in a file in the target (ops.SpillRunner):
// the output is held until it passes the request's thresholds, then the
// file is created and gets everything from the first byte. A failing file
// (a full disk) never fails or blocks the run: saving stops, a note is
// tried at its end, the outcome says why.
type spiller struct {
	ctx  context.Context
	fsys ops.FS
	// whole measures the sandbox's saved outputs for req.Total: the
	// target unconfined (the spill root lies outside the call's roots).
	whole ops.FS
	req   *proto.SpillRequest

	held     []byte // the output until the file is created
	raw      int64
	newlines int64
	openLine bool // the last byte was not "\n"

	w       io.WriteCloser
	budget  *savedout.File // the sandbox's total (req.Total)
	created bool
	written int64
	stopped bool
	err     error
}

func newSpiller(ctx context.Context, fsys, whole ops.FS, req *proto.SpillRequest) *spiller {
	return &spiller{ctx: context.WithoutCancel(ctx), fsys: fsys, whole: whole, req: req}
}

// add takes the next chunk of output.
func (s *spiller) add(p []byte) {
	if s.stopped || len(p) == 0 {
		return
	}
	s.raw += int64(len(p))
	for _, c := range p {
		if c == '\n' {
			s.newlines++
		}
	}
	s.openLine = p[len(p)-1] != '\n'
	if s.w != nil {
		s.write(p)
		return
	}
	lines := s.newlines
	if s.openLine {
		lines++
	}
	if s.raw <= s.req.AfterBytes && lines <= s.req.AfterLines {
		s.held = append(s.held, p...)
		return
	}
	if err := s.open(); err != nil {
		s.err, s.stopped, s.held = err, true, nil
		return
	}
	held := s.held
	s.held = nil
	s.write(held)
	s.write(p)
}

func (s *spiller) open() error {
	const flag = syscall.O_CREAT | syscall.O_EXCL
	name := string(s.req.Path)
	s.budget = savedout.Start(s.ctx, s.whole, name, s.req.Total)
	if !s.budget.Room() {
		s.budget.Done()
		return savedout.Error(s.req.Total)
	}
	w, err := s.fsys.OpenWriter(s.ctx, name, flag, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		if merr := s.fsys.MkdirAll(s.ctx, path.Dir(name), 0o700); merr == nil {
			w, err = s.fsys.OpenWriter(s.ctx, name, flag, 0o600)
		}
	}
	if err != nil {
		return err
	}
	s.w, s.created = w, true
	return nil
}

func (s *spiller) write(p []byte) {
	if s.stopped || len(p) == 0 {
		return
	}
	capped := false
	if room := s.req.Cap - s.written; s.req.Cap > 0 && int64(len(p)) >= room {
		p, capped = p[:max(room, 0)], int64(len(p)) > room
	}
	full := false
	if t := s.budget.Take(len(p)); t < len(p) {
		p, full, capped = p[:t], true, false
	}
	n, err := s.w.Write(p)
	s.written += int64(n)
	if err == nil && full {
		err = savedout.Error(s.req.Total)
	}
	if err != nil {
		s.err, s.stopped = err, true
		// Say so at the end of the file, if there is room for that.
		io.WriteString(s.w, savedout.Note(s.written, err))
		return
	}
	if capped {
		s.stopped = true
		io.WriteString(s.w, s.req.CapNote)
	}
}

// finish closes the file (without an fsync: the file is a convenience,
// not a record) and reports.
func (s *spiller) finish() *proto.SpillEnd {
	if s.budget != nil {
		s.budget.Done()
	}
	if s.w != nil {
		var err error
		if nc, ok := s.w.(interface{ closeNoSync() error }); ok {
			err = nc.closeNoSync()
		} else {
			err = s.w.Close()
		}
		if err != nil && s.err == nil {
			s.err = err
		}
	}
	return &proto.SpillEnd{Created: s.created, Bytes: s.written, Err: proto.FromError(s.err)}
}
