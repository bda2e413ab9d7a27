package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

func init() {
	register("tool", &command{summary: "run one tool call and print its result", run: runTool})
}

// runTool is `pi-sandbox tool [flags] NAME [JSON]`: a one-call batch through
// the loop's pipeline. Exit 0 whenever a result was produced (error results
// included), 1 when none could be (backend unreachable, transport failure),
// 2 for usage errors.
func runTool(ctx context.Context, args []string, io stdio) int {
	f := newFlags("tool", "[flags] NAME [JSON]", io)
	rest, code, ok := f.parse(args)
	if !ok {
		return code
	}
	if len(rest) < 1 || len(rest) > 2 {
		return f.usageError("want a tool name and at most one JSON argument")
	}
	name := rest[0]
	var raw []byte
	if len(rest) == 2 {
		raw = []byte(rest[1])
	} else {
		var err error
		if raw, err = readAll(io.in); err != nil {
			fmt.Fprintf(io.err, "pi-sandbox tool: read stdin: %v\n", err)
			return 1
		}
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	if !json.Valid(raw) {
		return f.usageError("the arguments are not valid JSON: %s", raw)
	}

	l, closeFn, code := openLoop(ctx, "tool", f.cfg, io)
	if l == nil {
		return code
	}
	defer closeFn()
	b := l.RunBatch(ctx, nil, []loop.ToolCall{{ID: "call_1", Name: name, Arguments: raw}}, nil)
	res := b.Results[0].Result
	if transportFailure(res) {
		fmt.Fprintf(io.err, "pi-sandbox tool: %v\n", res.Err)
		return 1
	}
	dropDeadSpillPath(f.cfg, res)
	out, err := loop.MarshalNoEscape(res)
	if err != nil {
		fmt.Fprintf(io.err, "pi-sandbox tool: %v\n", err)
		return 1
	}
	fmt.Fprintf(io.out, "%s\n", escapeJSONControls(out))
	return 0
}

// transportFailure tells a lost connection or unreachable engine from a
// tool failure: no result can stand for it.
func transportFailure(r *loop.Result) bool {
	return r.IsError && r.Err != nil && errors.Is(r.Err, ops.ErrTransport)
}

func readAll(r io.Reader) ([]byte, error) {
	if r == nil {
		return nil, nil
	}
	return io.ReadAll(r)
}
