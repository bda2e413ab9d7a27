package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Call is one tool call going through the pipeline.
type Call struct {
	ID   string
	Name string
	// RawArgs are the arguments exactly as the model sent them; events and
	// audit logs show these.
	RawArgs json.RawMessage
	// Args are the prepared, coerced and validated arguments the tool will
	// get. A before hook may change them; they are then executed without
	// revalidation, as in pi.
	Args map[string]any
	// Tool is the tool the name resolved to.
	Tool Tool
	// Message is the assistant message the call belongs to; nil for calls
	// that did not come from a model (pi-sandbox tool, batch).
	Message *AssistantMessage
}

// BeforeHandler decides whether a prepared call runs. It returns nil to let
// it run, or the call's immediate result (a blocked call).
type BeforeHandler func(ctx context.Context, call *Call) *Result

// ExecHandler runs a call and returns its result (never nil). update may be
// nil.
type ExecHandler func(ctx context.Context, call *Call, update UpdateFunc) *Result

// BeforeMiddleware wraps the before-hook chain, ExecMiddleware the execution.
// The contract of both: call next at most once; you may short-circuit by
// returning without calling it; you may act before and after it. Chains are
// built once, when the Loop is made; the first middleware given is the
// outermost (it sees the call first and the result last).
type (
	BeforeMiddleware func(next BeforeHandler) BeforeHandler
	ExecMiddleware   func(next ExecHandler) ExecHandler
)

// Block is a before hook's verdict that stops a call.
type Block struct {
	// Reason is the error result's text; empty means "Tool execution was
	// blocked".
	Reason string
	// Terminate asks the batch to stop the run (pi's terminate: true).
	Terminate bool
}

// BeforeToolCall is pi's beforeToolCall: return a *Block to stop the call,
// nil to let it run. It may change call.Args (run without revalidation). An
// error becomes an immediate error result with the error's text.
type BeforeToolCall func(ctx context.Context, call *Call) (*Block, error)

// Override is an after hook's change to a result, field by field, no deep
// merge: each non-nil field replaces the result's (pi's `??`).
type Override struct {
	Content   []Content
	Details   any
	Terminate *bool
	IsError   *bool
	// StructuredContent replaces the result's when non-nil; when only
	// Content is replaced, the old structured content is dropped.
	StructuredContent any
}

// AfterToolCall is pi's afterToolCall: it sees every executed call's result
// and may return an Override (nil keeps the result). An error replaces the
// result with an error result carrying the error's text.
type AfterToolCall func(ctx context.Context, call *Call, result *Result) (*Override, error)

// Option configures a Loop.
type Option func(*Loop)

// WithBeforeMiddleware adds before-hook middleware.
func WithBeforeMiddleware(m ...BeforeMiddleware) Option {
	return func(l *Loop) { l.beforeMW = append(l.beforeMW, m...) }
}

// WithExecMiddleware adds execution middleware (redaction, audit, timing).
func WithExecMiddleware(m ...ExecMiddleware) Option {
	return func(l *Loop) { l.execMW = append(l.execMW, m...) }
}

// WithBeforeToolCall adds a before hook (command policy, for instance).
// Hooks run in the order given; the first block wins.
func WithBeforeToolCall(h BeforeToolCall) Option {
	return WithBeforeMiddleware(func(next BeforeHandler) BeforeHandler {
		return func(ctx context.Context, call *Call) *Result {
			block, err := safeBefore(ctx, h, call)
			if err != nil {
				return ErrorResult(err)
			}
			if block != nil {
				reason := block.Reason
				if reason == "" {
					reason = "Tool execution was blocked"
				}
				r := ErrorResult(&BlockedError{Reason: reason})
				r.Terminate = block.Terminate
				return r
			}
			return next(ctx, call)
		}
	})
}

// WithAfterToolCall adds an after hook (secret redaction, for instance).
// The hook given first runs last, so it sees the others' changes.
func WithAfterToolCall(h AfterToolCall) Option {
	return WithExecMiddleware(func(next ExecHandler) ExecHandler {
		return func(ctx context.Context, call *Call, update UpdateFunc) *Result {
			res := next(ctx, call, update)
			ov, err := safeAfter(ctx, h, call, res)
			if err != nil {
				return ErrorResult(err)
			}
			return applyOverride(res, ov)
		}
	})
}

// WithSequential makes every batch sequential (pi's toolExecution:
// "sequential").
func WithSequential() Option { return func(l *Loop) { l.sequential = true } }

// BlockedError is the error behind a blocked call's result.
type BlockedError struct{ Reason string }

func (e *BlockedError) Error() string { return e.Reason }

func applyOverride(r *Result, ov *Override) *Result {
	if ov == nil {
		return r
	}
	out := *r
	if ov.Content != nil {
		out.Content = ov.Content
		out.StructuredContent = nil
	}
	if ov.Details != nil {
		out.Details = ov.Details
	}
	if ov.Terminate != nil {
		out.Terminate = *ov.Terminate
	}
	if ov.IsError != nil {
		out.IsError = *ov.IsError
	}
	if ov.StructuredContent != nil {
		out.StructuredContent = ov.StructuredContent
	}
	return &out
}

func safeBefore(ctx context.Context, h BeforeToolCall, call *Call) (b *Block, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = panicError(p)
		}
	}()
	return h(ctx, call)
}

func safeAfter(ctx context.Context, h AfterToolCall, call *Call, r *Result) (ov *Override, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = panicError(p)
		}
	}()
	return h(ctx, call, r)
}

func panicError(p any) error {
	if err, ok := p.(error); ok {
		return err
	}
	return errors.New(fmt.Sprint(p))
}

// buildChains makes the two chains once (H11).
func (l *Loop) buildChains() {
	var before BeforeHandler = func(context.Context, *Call) *Result { return nil }
	for _, m := range slices.Backward(l.beforeMW) {
		before = m(before)
	}
	l.before = before
	exec := executeTool
	for _, m := range slices.Backward(l.execMW) {
		exec = m(exec)
	}
	l.exec = exec
}

// executeTool is the innermost ExecHandler: step 7 of pi's pipeline.
func executeTool(ctx context.Context, call *Call, update UpdateFunc) (res *Result) {
	defer func() {
		if p := recover(); p != nil {
			res = ErrorResult(fmt.Errorf("%v", panicError(p)))
		}
	}()
	r, err := call.Tool.Execute(ctx, call.ID, call.Args, update)
	if err != nil {
		return ErrorResult(err)
	}
	if r == nil {
		r = &Result{}
	}
	return r
}
