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

// runBatch is `pi-sandbox batch [flags] [--sequential]`: stdin holds a JSON
// array of {"id","name","arguments"}; stdout gets the events as JSON lines
// , tool_execution_end in completion order and the tool-result
// messages in source order. Exit 1 when a call hit a transport failure.
func runBatch(ctx context.Context, args []string, io stdio) int {
	f := newFlags("batch", "[flags] [--sequential] < calls.json", io)
	seq := f.Bool("sequential", false, "run the calls one at a time")
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
	var calls []loop.ToolCall
	dec := json.NewDecoder(bytes.NewReader(in))
	if err := dec.Decode(&calls); err != nil {
		return f.usageError("stdin must be a JSON array of {\"id\",\"name\",\"arguments\"}: %v", err)
	}
	if dec.More() {
		return f.usageError("stdin holds more than one JSON value")
	}
	for i, c := range calls {
		if c.Name == "" {
			return f.usageError("call %d has no name", i)
		}
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
	b := l.RunBatch(ctx, nil, calls, w.emit)
	if w.err != nil {
		fmt.Fprintf(io.err, "pi-sandbox batch: write: %v\n", w.err)
		return 1
	}
	code = 0
	for _, r := range b.Results {
		if transportFailure(r.Result) {
			fmt.Fprintf(io.err, "pi-sandbox batch: %s: %v\n", r.ToolCallID, r.Result.Err)
			code = 1
		}
	}
	return code
}
