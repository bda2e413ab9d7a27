package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/pi-sandbox/pi-sandbox/loop"
)

func init() {
	register("batch", &command{summary: "run a JSON array of tool calls from stdin, print events", run: runBatch})
}

// batchUsage is the synopsis, the input and the events `batch -h` states.
const batchUsage = `[flags] [--sequential] [--results] < calls.json

Runs the tool calls on stdin as one batch of a model's turn, as pi does:
in parallel unless --sequential (or a sequential tool) says otherwise.

Input: one JSON array of calls, each {"id","name","arguments"}; a call
without an id gets call_1, call_2, … by its position:
  [{"id":"a","name":"bash","arguments":{"command":"ls"}},
   {"name":"read","arguments":{"path":"go.mod","limit":5}}]

Output: pi's event stream, one JSON object per line:
  tool_execution_start   a call starts (every call, first)
    {"type":"tool_execution_start","toolCallId":"a","toolName":"bash","args":{"command":"ls"}}
  tool_execution_update  a running call's output so far (bash)
    {"type":"tool_execution_update","toolCallId":"a","toolName":"bash","args":{…},"partialResult":{"content":[…]}}
  tool_execution_end     a call finished, in completion order
    {"type":"tool_execution_end","toolCallId":"a","toolName":"bash","result":{"content":[…],"isError":false},"isError":false,"durationMs":12}
  message_start, message_end   the tool-result messages, in call order
    {"type":"message_start","message":{"role":"toolResult","toolCallId":"a","toolName":"bash","content":[…],"isError":false}}
    {"type":"message_end","message":{"role":"toolResult","toolCallId":"a",…,"durationMs":12}}
With --results, instead, one line per call as it finishes:
    {"id":"a","name":"bash","result":{"content":[…],"isError":false}}

Exit status: 0 when every call produced a result (error results too), 1
when a call hit a backend failure (named on stderr), 2 for usage or a
configuration the engine refuses.`

// runBatch is `pi-sandbox batch [flags] [--sequential] [--results]`.
func runBatch(ctx context.Context, args []string, io stdio) int {
	f := newFlags("batch", batchUsage, io)
	seq := f.Bool("sequential", false, "run the calls one at a time")
	f.BoolVar(&f.cfg.AutoCheckpoint, "auto-checkpoint", false, autoCheckpointUsage)
	results := f.Bool("results", false, "print one {\"id\",\"name\",\"result\"} line per finished call instead of the events")
	rest, code, ok := f.parse(args)
	if !ok {
		return code
	}
	if len(rest) != 0 {
		return f.usageError("unexpected arguments %q (the calls come on stdin)", rest)
	}
	in, err := readAll(io.in)
	if err != nil {
		fmt.Fprintf(io.err, "pi-sandbox batch: read stdin: %v\n", err)
		return 1
	}
	calls, err := decodeCalls(in)
	if err != nil {
		return f.usageError("%v", err)
	}

	var opts []loop.Option
	if *seq {
		opts = append(opts, loop.WithSequential())
	}
	l, closeFn, code := openLoop(ctx, "batch", f.cfg, io, opts...)
	if l == nil {
		return code
	}
	defer closeFn()
	w := newEventWriter(io.out)
	emit := w.emit
	if *results {
		emit = w.emitResult
	}
	b := l.RunBatch(ctx, nil, calls, emit)
	if w.err != nil {
		fmt.Fprintf(io.err, "pi-sandbox batch: write: %v\n", w.err)
		return 1
	}
	code = 0
	for _, r := range b.Results {
		if c, failed := noResult(r.Result); failed {
			fmt.Fprintf(io.err, "pi-sandbox batch: %s: %v\n", r.ToolCallID, r.Result.Err)
			code = max(code, c)
		}
	}
	return code
}

// decodeCalls reads the batch's input: one JSON array of calls, each with a
// name; a call without an id gets call_N, N its position from 1.
func decodeCalls(in []byte) ([]loop.ToolCall, error) {
	var calls []loop.ToolCall
	dec := json.NewDecoder(bytes.NewReader(in))
	if err := dec.Decode(&calls); err != nil {
		return nil, fmt.Errorf("stdin must be a JSON array of {\"id\",\"name\",\"arguments\"}: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("stdin holds more than one JSON value")
	}
	for i, c := range calls {
		if c.Name == "" {
			return nil, fmt.Errorf("call %d has no name", i)
		}
		if c.ID == "" {
			calls[i].ID = fmt.Sprintf("call_%d", i+1)
		}
	}
	return calls, nil
}
