package loop

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/pi-sandbox/pi-sandbox/internal/growstack"
)

// Batch is the outcome of one assistant message's tool calls.
type Batch struct {
	// Results are the tool-result messages in source order.
	Results []*ToolResultMessage
	// Terminate is true when the batch had results and every one of them
	// asked to terminate.
	Terminate bool
}

// emitter serializes emission: parallel calls finish on their own
// goroutines.
type emitter struct {
	mu   sync.Mutex
	emit EmitFunc
}

func (e *emitter) send(ev Event) {
	if e.emit == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.emit(ev)
}

// RunBatch runs the calls of one assistant message (msg may be nil) as pi
// 1.6 does: sequentially when the Loop is sequential or
// any called tool is Sequential, otherwise all calls are prepared first, in
// order, and the prepared ones then run concurrently; tool_execution_end
// events come in completion order and the tool-result messages, after all
// calls finished, in source order. Every call gets a result, aborted ones
// "Operation aborted".
func (l *Loop) RunBatch(ctx context.Context, msg *AssistantMessage, calls []ToolCall, emit EmitFunc) *Batch {
	em := &emitter{emit: emit}
	results := make([]*ToolResultMessage, len(calls))
	if l.isSequential(calls) {
		for i, tc := range calls {
			em.send(ToolExecutionStart{tc.ID, tc.Name, tc.Arguments})
			c, res := l.prepare(ctx, tc, msg)
			var dur *int64
			if c != nil {
				res, dur = l.run(ctx, c, em)
			}
			results[i] = l.finish(tc, res, dur, em)
			emitMessage(em, results[i])
		}
		return newBatch(results)
	}

	prepared := make([]*Call, len(calls))
	for i, tc := range calls {
		em.send(ToolExecutionStart{tc.ID, tc.Name, tc.Arguments})
		c, res := l.prepare(ctx, tc, msg)
		if c == nil {
			results[i] = l.finish(tc, res, nil, em)
			continue
		}
		prepared[i] = c
	}
	var wg sync.WaitGroup
	// Calls of StartOrdered tools start in source order (see StartOrdered):
	// each waits for the previous one's gate.
	var prevGate *startGate
	for i, c := range prepared {
		if c == nil {
			continue
		}
		var wait, gate *startGate
		cctx := ctx
		if isStartOrdered(c) {
			wait, gate = prevGate, newStartGate()
			prevGate = gate
			cctx = context.WithValue(ctx, startedKey{}, gate)
		}
		wg.Go(func() {
			growstack.Grow() // a tool call runs deep: one stack copy, not three
			if gate != nil {
				defer gate.open()
			}
			if wait != nil {
				select {
				case <-wait.ch:
				case <-ctx.Done():
				}
			}
			var (
				res *Result
				dur *int64
			)
			if ctx.Err() != nil {
				res = abortResult(ctx)
			} else {
				res, dur = l.run(cctx, c, em)
			}
			results[i] = l.finish(calls[i], res, dur, em)
		})
	}
	wg.Wait()
	for _, r := range results {
		emitMessage(em, r)
	}
	return newBatch(results)
}

// RejectBatch answers the calls of a message that stopped for "length":
// none runs, no hook is called, each gets pi's error text, sequentially.
// The batch never terminates.
func (l *Loop) RejectBatch(calls []ToolCall, emit EmitFunc) *Batch {
	em := &emitter{emit: emit}
	results := make([]*ToolResultMessage, len(calls))
	for i, tc := range calls {
		em.send(ToolExecutionStart{tc.ID, tc.Name, tc.Arguments})
		res := ErrorText(fmt.Sprintf("Tool call %q was not executed: the response hit the output token limit, so its arguments may be truncated. Re-issue the tool call with complete arguments.", tc.Name))
		results[i] = l.finish(tc, res, nil, em)
		emitMessage(em, results[i])
	}
	return &Batch{Results: results}
}

func (l *Loop) isSequential(calls []ToolCall) bool {
	if l.sequential {
		return true
	}
	for _, tc := range calls {
		if t, ok := l.byName[tc.Name]; ok && t.Mode() == Sequential {
			return true
		}
	}
	return false
}

// run executes a prepared call through the exec chain (tool, after hooks),
// forwarding updates until the call settles.
func (l *Loop) run(ctx context.Context, c *Call, em *emitter) (*Result, *int64) {
	var (
		mu      sync.Mutex
		settled bool
	)
	update := func(partial *Result) {
		if partial == nil {
			return
		}
		// Holding mu while emitting makes settling below wait for an
		// emission in progress; later updates are dropped (pi #5208).
		mu.Lock()
		defer mu.Unlock()
		if settled {
			return
		}
		cp := *partial
		cp.Content = append([]Content{}, partial.Content...)
		em.send(ToolExecutionUpdate{c.ID, c.Name, c.RawArgs, &cp})
	}
	start := time.Now()
	res := l.exec(ctx, c, update)
	if res == nil {
		res = &Result{}
	}
	mu.Lock()
	settled = true
	mu.Unlock()
	ms := time.Since(start).Milliseconds()
	return res, &ms
}

// finish emits tool_execution_end and makes the result message.
func (l *Loop) finish(tc ToolCall, res *Result, dur *int64, em *emitter) *ToolResultMessage {
	res = finalize(res)
	em.send(ToolExecutionEnd{tc.ID, tc.Name, res, res.IsError, dur})
	return &ToolResultMessage{ToolCallID: tc.ID, ToolName: tc.Name, Result: res, DurationMs: dur}
}

func emitMessage(em *emitter, m *ToolResultMessage) {
	em.send(MessageStart{m})
	em.send(MessageEnd{m})
}

func newBatch(results []*ToolResultMessage) *Batch {
	term := len(results) > 0
	for _, r := range results {
		if !r.Result.Terminate {
			term = false
		}
	}
	return &Batch{Results: results, Terminate: term}
}
