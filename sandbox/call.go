package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

// callSeq numbers the calls made with Call (their call ids in the audit
// log: "call-1", "call-2", ...).
var callSeq atomic.Uint64

// Call runs one tool call through the whole pipeline — argument
// preparation, coercion and validation with pi's texts, the policy's hooks
// (tool and command rules, redaction), the audit log — and returns its
// result. A tool failure (a missing file, a blocked command, invalid
// arguments, an unknown tool) is an error result (IsError), not an error.
// The error is non-nil only when args cannot be encoded, or, together with
// the error result, when the backend was lost (errors.Is(err,
// ops.ErrTransport)): then later calls fail too.
//
// Call builds a loop over the one tool per call; a program making many
// calls, or batches, uses [Sandbox.NewLoop].
func (s *Sandbox) Call(ctx context.Context, name string, args map[string]any) (*loop.Result, error) {
	raw := []byte("{}")
	if args != nil {
		var err error
		if raw, err = json.Marshal(args); err != nil {
			return nil, fmt.Errorf("sandbox: call %s: arguments: %w", name, err)
		}
	}
	all := s.Tools()
	tools := all // an unknown name gets pi's "Tool … not found" from the whole set
	for _, t := range all {
		if t.Name() == name {
			tools = []loop.Tool{t}
			break
		}
	}
	l, err := loop.New(tools, s.LoopOptions()...)
	if err != nil {
		return nil, fmt.Errorf("sandbox: call %s: %w", name, err)
	}
	id := fmt.Sprintf("call-%d", callSeq.Add(1))
	b := l.RunBatch(ctx, nil, []loop.ToolCall{{ID: id, Name: name, Arguments: raw}}, nil)
	res := b.Results[0].Result
	if res.Err != nil && errors.Is(res.Err, ops.ErrTransport) {
		return res, fmt.Errorf("sandbox: call %s: %w", name, res.Err)
	}
	return res, nil
}
