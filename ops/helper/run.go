package helper

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

const (
	// killWait bounds how long Run waits, after asking the helper to kill a
	// command's tree, for the end frame that says the tree is dead.
	killWait = 5 * time.Second
	// stallMargin is how long past its timeout a command may go without an
	// end frame before the client stops waiting for the helper (a paused
	// container): the helper enforces the timeout itself, this is the
	// backstop.
	stallMargin = 3 * time.Second
)

// Run runs cmd in the target under the shim (see ops.Runner). The timeout
// travels with the request, so the helper enforces it even if this client
// stalls; cancelling ctx asks the helper to kill the tree and waits until it
// has.
func (cl *Client) Run(ctx context.Context, cmd *ops.Cmd) error {
	return cl.run(ctx, cmd, nil)
}

// RunSpill is Run with the output also saved in a file in the target, by
// the helper (ops.SpillRunner): the bytes are not sent back to be saved.
func (cl *Client) RunSpill(ctx context.Context, cmd *ops.Cmd, sp *ops.Spill) error {
	return cl.run(ctx, cmd, sp)
}

// ChecksDir reports that Run checks cmd.Dir in the target before the
// command starts (ops.DirCheckingRunner).
func (cl *Client) ChecksDir() bool { return true }

func (cl *Client) run(ctx context.Context, cmd *ops.Cmd, sp *ops.Spill) error {
	if ctx.Err() != nil {
		return cl.c.errorf("%w", ops.Canceled(ctx))
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	id := hex.EncodeToString(rnd[:])
	req := &proto.RunRequest{ID: id, Command: proto.Str(cmd.Command), Dir: proto.Str(cmd.Dir), Env: proto.Strs(cmd.Env), Timeout: int64(cmd.Timeout)}
	if cmd.BaseEnv != nil {
		// Replaces the helper's base (its own environment); empty too.
		base := proto.Strs(cmd.BaseEnv)
		req.Base = &base
	}
	if sp != nil {
		req.Spill = &proto.SpillRequest{Path: proto.Str(sp.Path), AfterBytes: sp.AfterBytes, AfterLines: sp.AfterLines, Cap: sp.Cap, CapNote: sp.CapNote, Total: sp.Total}
		if _, ok := cmd.Output.(ops.OutputSkipper); ok && sp.Skip {
			req.Spill.Skip, req.Spill.SkipAfter, req.Spill.SkipHold = true, sp.SkipAfter, sp.SkipHold
		}
	}

	// Once the command runs, the request lives on its own context: a cancel
	// of ctx becomes a kill request, and the reply is read on until the tree
	// is dead. Until then (a place among the calls in flight, the request
	// sent, the reply's headers: all of which stall in a paused container)
	// ctx bounds it, and the timeout too.
	reqCtx, abort := context.WithCancel(context.WithoutCancel(ctx))
	defer abort()
	var started atomic.Bool
	stop := context.AfterFunc(ctx, func() {
		if !started.Load() {
			abort()
		}
	})
	defer stop()
	var startTimer *time.Timer
	var timedOut atomic.Bool
	if cmd.Timeout > 0 {
		startTimer = time.AfterFunc(cmd.Timeout+stallMargin, func() {
			if !started.Load() {
				timedOut.Store(true)
				abort()
			}
		})
	}
	resp, release, err := cl.call(reqCtx, proto.PathRun, req, false, nil)
	started.Store(true)
	if startTimer != nil {
		startTimer.Stop()
	}
	if err != nil {
		if ctx.Err() != nil {
			return cl.c.errorf("%w", ops.Canceled(ctx))
		}
		if timedOut.Load() {
			return &ops.TimeoutError{Limit: cmd.Timeout}
		}
		return err
	}
	defer release()

	out := cmd.Output
	if out == nil {
		out = io.Discard
	}
	type result struct {
		end  *proto.RunEnd
		err  error // the stream broke
		sink error // the output sink failed
	}
	done := make(chan result, 1)
	go func() {
		var buf []byte
		var sinkErr error
		for {
			kind, p, err := proto.ReadFrame(resp.Body, buf)
			if fe := (*proto.FrameSizeError)(nil); errors.As(err, &fe) {
				err = &LimitError{What: fmt.Sprintf("run frame (%d bytes)", fe.Size), Limit: "1 MiB"}
			}
			if err != nil {
				done <- result{err: err, sink: sinkErr}
				return
			}
			buf = p[:0]
			switch kind {
			case proto.FrameOutput:
				if sinkErr == nil {
					if _, err := out.Write(p); err != nil {
						sinkErr = err
						// Nobody takes the output: stop the command.
						go cl.kill(id)
					}
				}
			case proto.FrameSkip:
				var k proto.Skip
				if err := json.Unmarshal(p, &k); err != nil {
					done <- result{err: err, sink: sinkErr}
					return
				}
				if sk, ok := out.(ops.OutputSkipper); ok && sinkErr == nil {
					sk.SkipOutput(ops.SkippedOutput{Raw: k.Raw, Decoded: k.Decoded, Newlines: k.Newlines, LastLine: k.LastLine})
				}
			case proto.FrameEnd:
				var e proto.RunEnd
				if err := json.Unmarshal(p, &e); err != nil {
					done <- result{err: err, sink: sinkErr}
					return
				}
				done <- result{end: &e, sink: sinkErr}
				return
			}
		}
	}()

	var stallC <-chan time.Time
	if cmd.Timeout > 0 {
		t := time.NewTimer(cmd.Timeout + stallMargin)
		defer t.Stop()
		stallC = t.C
	}
	canceled, stalled := false, false
	var r result
wait:
	for {
		select {
		case r = <-done:
			break wait
		case <-ctx.Done():
			canceled = true
			go cl.kill(id)
			select {
			case r = <-done:
			case <-time.After(killWait):
				abort()
				r = <-done
			}
			break wait
		case <-stallC:
			// The helper has not ended the command in time: it is frozen
			// (a paused container) or gone. Ask for the kill (it is served
			// when the helper runs again) and report the timeout.
			stalled = true
			go cl.kill(id)
			abort()
			r = <-done
			break wait
		}
	}
	if sp != nil && r.end != nil && r.end.Spill != nil {
		sp.Created, sp.Bytes, sp.Err = r.end.Spill.Created, r.end.Spill.Bytes, r.end.Spill.Err.Err(cl.roots())
	}
	switch {
	case canceled:
		return cl.c.errorf("%w", ops.Canceled(ctx))
	case stalled && (r.end == nil || r.end.Kind != "timeout"):
		return &ops.TimeoutError{Limit: cmd.Timeout}
	case r.end == nil:
		// The stream broke: a lost helper or connection (ops.ErrTransport),
		// not a command whose status went missing.
		return cl.bodyErr(reqCtx, r.err)
	case r.sink != nil:
		return cl.c.errorf("output: %w", r.sink)
	}
	return endError(cl, r.end, cmd.Timeout)
}

// kill asks the helper to stop run id.
func (cl *Client) kill(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), killWait)
	defer cancel()
	s, err := cl.c.session(ctx)
	if err != nil {
		return
	}
	_ = s.callJSON(ctx, cl.c, proto.PathKill, proto.KillRequest{ID: id}, nil)
}

func endError(cl *Client, e *proto.RunEnd, limit time.Duration) error {
	switch e.Kind {
	case "exit":
		if e.Code == 0 && !e.OOM {
			return nil
		}
		return &ops.ExitError{Code: e.Code, Signal: e.Signal, OOMKilled: e.OOM}
	case "timeout":
		return &ops.TimeoutError{Limit: limit, ShellExited: e.ShellExited, ShellExitCode: e.ShellExitCode, ShellRuntime: time.Duration(e.ShellRuntime)}
	case "start":
		return &ops.StartError{Err: e.Err.Err(cl.roots())}
	case "limit":
		return fmt.Errorf("%w: %s", ops.ErrBackgroundLimit, clipText(strings.TrimPrefix(e.Message, "local: ops: too many background processes: ")))
	case "canceled":
		return cl.c.errorf("%w: %w", ops.ErrCanceled, errors.New("killed by the helper"))
	}
	return cl.c.errorf("%w: %s", ops.ErrExitUnknown, clipText(e.Message))
}

// Processes lists the background processes the helper owns.
func (cl *Client) Processes(ctx context.Context) ([]ops.Process, error) {
	s, err := cl.c.session(ctx)
	if err != nil {
		return nil, err
	}
	var reply proto.PSReply
	if err := s.callJSON(ctx, cl.c, proto.PathPS, struct{}{}, &reply); err != nil {
		return nil, err
	}
	out := make([]ops.Process, 0, len(reply.Processes))
	for _, p := range reply.Processes {
		out = append(out, ops.Process{PID: p.PID, Started: time.Unix(0, p.Started), State: p.State, Command: string(p.Command), Group: p.Group, Log: string(p.Log)})
	}
	return out, nil
}
