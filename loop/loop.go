package loop

import (
	"context"
	"encoding/json"
	"fmt"
)

// Loop runs tool calls through pi's pipeline and runs agent sessions. It is
// safe for concurrent use once made.
type Loop struct {
	tools      []Tool
	byName     map[string]Tool
	validators map[string]*validator
	sequential bool

	beforeMW []BeforeMiddleware
	execMW   []ExecMiddleware
	before   BeforeHandler
	exec     ExecHandler
}

// New makes a Loop over tools. Tool schemas are compiled here, so a broken
// schema is an error now rather than on the first call.
func New(tools []Tool, opts ...Option) (*Loop, error) {
	l := &Loop{
		tools:      tools,
		byName:     make(map[string]Tool, len(tools)),
		validators: make(map[string]*validator, len(tools)),
	}
	for _, t := range tools {
		name := t.Name()
		if _, dup := l.byName[name]; dup {
			return nil, fmt.Errorf("loop: two tools named %q", name)
		}
		v, err := newValidator(name, t.Parameters())
		if err != nil {
			return nil, err
		}
		l.byName[name] = t
		l.validators[name] = v
	}
	for _, o := range opts {
		o(l)
	}
	l.buildChains()
	return l, nil
}

// Tools returns the loop's tools in the order given to New.
func (l *Loop) Tools() []Tool { return l.tools }

// AbortError is the error behind "Operation aborted" results; it wraps the
// context's cause.
type AbortError struct{ Cause error }

func (e *AbortError) Error() string { return "Operation aborted" }
func (e *AbortError) Unwrap() error { return e.Cause }

func abortResult(ctx context.Context) *Result {
	return ErrorResult(&AbortError{Cause: context.Cause(ctx)})
}

// prepare is the first six steps of pi 1.6's tool call: abort check, lookup,
// prepareArguments, coercion and validation, before hooks. It returns the
// prepared call, or the call's immediate result.
func (l *Loop) prepare(ctx context.Context, tc ToolCall, msg *AssistantMessage) (c *Call, res *Result) {
	if ctx.Err() != nil {
		return nil, abortResult(ctx)
	}
	tool, ok := l.byName[tc.Name]
	if !ok {
		return nil, ErrorText(fmt.Sprintf("Tool %s not found", tc.Name))
	}
	defer func() {
		if p := recover(); p != nil {
			c, res = nil, ErrorResult(panicError(p))
		}
	}()
	raw := rawOrEmpty(tc.Arguments)
	var decoded any
	if err := json.Unmarshal(raw, &decoded); err != nil {
		return nil, ErrorText(fmt.Sprintf("Invalid arguments for tool %q: %v\n\nReceived arguments:\n%s", tc.Name, err, raw))
	}
	args := decoded
	changed := false
	if p, ok := tool.(ArgumentPreparer); ok {
		args = p.PrepareArguments(deepCopy(decoded))
		changed = !sameValue(args, decoded)
	}
	valid, err := l.validators[tc.Name].validate(args, receivedArguments(raw, args, changed))
	if err != nil {
		return nil, ErrorResult(err)
	}
	c = &Call{ID: tc.ID, Name: tc.Name, RawArgs: tc.Arguments, Args: valid, Tool: tool, Message: msg}
	blocked := l.before(ctx, c)
	if ctx.Err() != nil {
		return nil, abortResult(ctx)
	}
	if blocked != nil {
		return nil, finalize(blocked)
	}
	return c, nil
}

// finalize makes a result safe to emit: content never null.
func finalize(r *Result) *Result {
	if r.Content == nil {
		r.Content = []Content{}
	}
	return r
}
