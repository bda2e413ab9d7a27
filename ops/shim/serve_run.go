package shim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"syscall"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

// maxOutputFrame is the largest output frame the helper sends: large, so
// a fast command's output crosses in few DATA frames and writes (the cost
// on a VM is per wakeup, not per byte); the client reads frames of up to
// this size (helper.Config's HTTP/2 settings) within its stream window.
const maxOutputFrame = 256 << 10

func (s *server) handleRun(w http.ResponseWriter, r *http.Request) {
	var req proto.RunRequest
	if !decode(w, r.Body, &req) {
		return
	}
	b := s.backend(w)
	if b == nil {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	if req.ID != "" {
		s.mu.Lock()
		s.runs[req.ID] = cancel
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			delete(s.runs, req.ID)
			s.mu.Unlock()
		}()
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	fw := &frameWriter{w: w, rc: http.NewResponseController(w)}
	fw.rc.Flush()

	// The end frame is the handler's last write: it is not flushed here,
	// so that it leaves with the end of the stream, in one DATA frame.
	end := func(e proto.RunEnd) {
		p, _ := json.Marshal(e)
		proto.WriteFrame(w, proto.FrameEnd, p)
	}
	dir := string(req.Dir)
	if dir == "" {
		dir = b.Info().WorkDir
	}
	if req.Roots != 0 {
		fsys, err := s.lookupFS(req.Roots)
		if err != nil {
			end(proto.RunEnd{Kind: "unknown", Message: err.Error()})
			return
		}
		if _, err := fsys.Stat(ctx, dir); err != nil {
			end(proto.RunEnd{Kind: "start", Err: proto.FromError(err)})
			return
		}
	}
	var sp *spiller
	if req.Spill != nil {
		fsys, err := s.lookupFS(req.Roots)
		if err != nil {
			end(proto.RunEnd{Kind: "unknown", Message: err.Error()})
			return
		}
		sp = newSpiller(ctx, fsys, b, req.Spill)
		fw.spill = sp
		fw.skip = newSkipper(req.Spill)
	}
	if s.limits != nil {
		if why := s.limits.check(replaceGrace); why != "" {
			end(proto.RunEnd{Kind: "start", Err: proto.FromError(fmt.Errorf("shim: the helper daemon's resource limits were changed by a command (%s): it is being replaced by a fresh one; run the command again", why))})
			return
		}
	}
	oomBefore := int64(-1)
	s.mu.Lock()
	counted := s.oom
	s.mu.Unlock()
	if counted {
		oomBefore = oomKills()
	}
	cmd := &ops.Cmd{
		Command: string(req.Command),
		Dir:     dir,
		Env:     proto.Strings(req.Env),
		Output:  fw,
		Timeout: time.Duration(req.Timeout),
	}
	if req.Base != nil {
		cmd.BaseEnv = proto.Strings(*req.Base) // not nil: an empty base too
	}
	err := b.Run(ctx, cmd)
	e := runEnd(err, oomBefore)
	if err == nil && oomBefore >= 0 && oomKills() > oomBefore {
		// The shell survived, a process of its tree did not.
		fw.Write([]byte(ops.OOMNote))
	}
	replaceWhy := ""
	if s.limits != nil {
		var note string
		note, replaceWhy = s.limits.afterRun()
		fw.Write([]byte(note))
	}
	if fw.skip != nil {
		fw.skip.finish(fw)
	}
	if sp != nil {
		e.Spill = sp.finish()
	}
	end(e)
	if replaceWhy != "" {
		fw.rc.Flush()
		s.limits.replace(replaceWhy, replaceGrace)
	}
}

func (s *server) handleKill(w http.ResponseWriter, r *http.Request) {
	var req proto.KillRequest
	if !decode(w, r.Body, &req) {
		return
	}
	s.mu.Lock()
	cancel := s.runs[req.ID]
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *server) handlePS(w http.ResponseWriter, r *http.Request) {
	b := s.backend(w)
	if b == nil {
		return
	}
	ps, err := b.Processes(r.Context())
	if err != nil {
		replyErr(w, err)
		return
	}
	reply := proto.PSReply{Processes: []proto.Process{}}
	for _, p := range ps {
		reply.Processes = append(reply.Processes, proto.Process{PID: p.PID, Started: p.Started.UnixNano(), State: p.State, Command: proto.Str(p.Command), Group: p.Group, Log: proto.Str(p.Log)})
	}
	writeJSON(w, reply)
}

// runEnd encodes Run's outcome.
func runEnd(err error, oomBefore int64) proto.RunEnd {
	var (
		ee *ops.ExitError
		se *ops.StartError
		te *ops.TimeoutError
	)
	switch {
	case err == nil:
		return proto.RunEnd{Kind: "exit"}
	case errors.As(err, &ee):
		e := proto.RunEnd{Kind: "exit", Code: ee.Code, Signal: ee.Signal, OOM: ee.OOMKilled}
		if ee.Signal == int(syscall.SIGKILL) && oomBefore >= 0 && oomKills() > oomBefore {
			e.OOM = true
		}
		return e
	case errors.As(err, &se):
		return proto.RunEnd{Kind: "start", Err: proto.FromError(se.Err)}
	case errors.As(err, &te):
		return proto.RunEnd{Kind: "timeout", ShellExited: te.ShellExited, ShellExitCode: te.ShellExitCode, ShellRuntime: int64(te.ShellRuntime)}
	case errors.Is(err, ops.ErrCanceled):
		return proto.RunEnd{Kind: "canceled"}
	case errors.Is(err, ops.ErrBackgroundLimit):
		return proto.RunEnd{Kind: "limit", Message: err.Error()}
	}
	return proto.RunEnd{Kind: "unknown", Message: err.Error()}
}

// frameWriter sends command output as frames, flushed as they are written:
// a write blocks while the client's stream window is full, which blocks the
// command (backpressure) instead of buffering its output here.
type frameWriter struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	spill *spiller // nil: no spill file
	skip  *skipper // nil: everything is sent
	buf   []byte   // one frame, header and payload: one write, one DATA frame
}

func (f *frameWriter) Write(p []byte) (int, error) {
	if f.spill != nil {
		f.spill.add(p)
	}
	if f.skip != nil {
		if _, err := f.send(f.skip.take(p)); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return f.send(p)
}

// send writes p as output frames.
func (f *frameWriter) send(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n := 0
	for len(p) > 0 {
		k := min(len(p), maxOutputFrame)
		f.buf = proto.AppendFrame(f.buf[:0], proto.FrameOutput, p[:k])
		if _, err := f.w.Write(f.buf); err != nil {
			return n, err
		}
		n += k
		p = p[k:]
	}
	return n, f.rc.Flush()
}
