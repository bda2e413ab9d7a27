package sandbox

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

// autoCheckpoint is Config.AutoCheckpoint at work: a counter of the
// executed calls and where a failure is told.
type autoCheckpoint struct {
	calls atomic.Int64
	note  func(string)
}

// startAutoCheckpoint checks that the sandbox can keep checkpoints (a
// lasting store its backend serves) before the first call needs one: a
// sandbox that cannot is refused when it opens, with the reason.
func (s *Sandbox) startAutoCheckpoint(ctx context.Context, note func(string)) error {
	if _, err := s.checkpoint(ctx, &ops.CheckpointOp{Op: ops.CheckpointList}, nil); err != nil {
		if errors.Is(err, ops.ErrUnsupported) || errors.Is(err, ops.ErrConfig) {
			return ops.ConfigError("sandbox: --auto-checkpoint: %v", err)
		}
		return fmt.Errorf("sandbox: --auto-checkpoint: %w", err)
	}
	s.auto = &autoCheckpoint{note: note}
	return nil
}

// changesFiles names the tools whose calls may change the working
// directory: each executed call of one is followed by a checkpoint.
func changesFiles(tool string) bool {
	return tool == "write" || tool == "edit" || tool == "bash"
}

// middleware checkpoints the working directory after every executed
// write, edit and bash call, naming the checkpoint "call-N" (N counts the
// sandbox's executed calls from 1) and recording the tool-call id. A
// failure never changes the call's result: it is told to the note.
func (a *autoCheckpoint) middleware(s *Sandbox) loop.ExecMiddleware {
	return func(next loop.ExecHandler) loop.ExecHandler {
		return func(ctx context.Context, call *loop.Call, update loop.UpdateFunc) *loop.Result {
			n := a.calls.Add(1)
			res := next(ctx, call, update)
			if !changesFiles(call.Name) {
				return res
			}
			name := fmt.Sprintf("call-%d", n)
			// The checkpoint follows the call even when the call was
			// cancelled: what it changed is what an undo needs.
			_, err := s.checkpoint(context.WithoutCancel(ctx), &ops.CheckpointOp{Op: ops.CheckpointCreate, Name: name, Auto: true, Call: call.ID}, nil)
			if err != nil && a.note != nil {
				a.note(fmt.Sprintf("the automatic checkpoint after %s (%s %s) failed: %v", name, call.Name, call.ID, err))
			}
			return res
		}
	}
}
