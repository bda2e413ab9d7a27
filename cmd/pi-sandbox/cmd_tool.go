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
	register("tool", &command{summary: "run one tool call and print its result (no NAME: list the tools)", run: runTool})
}

// toolUsage is the synopsis and the rules `tool -h` states.
const toolUsage = `[flags] NAME [JSON]
       pi-sandbox tool [--list]            the tools, their arguments
       pi-sandbox tool NAME --schema       NAME's JSON Schema (what the model gets)

Runs one call of tool NAME (read, bash, edit, write, grep, find, ls) with
the JSON object of arguments given, or read from stdin ({} when empty), and
prints pi's result JSON on stdout: {"content":[…],"details":…,"isError":…}.
--text prints only the result's text instead (an error result's too),
ending in a newline, other control characters than newline and tab
escaped (\r, \x1b; the JSON has the exact text).

Exit status:
  0  a result was produced, an error result too (isError: a failing tool,
     a non-zero command exit, a timeout); with --fail an error result is 1
  1  no result: the backend failed (engine unreachable, connection lost)
  2  usage error, or a configuration the engine refuses (an image that is
     not on the engine, an unknown user, a paused container), said on stderr

An unknown NAME gives pi's result "Tool NAME not found" and, on stderr, the
names of the tools. docs/tools.md describes every argument.`

// runTool is `pi-sandbox tool [flags] NAME [JSON]`: a one-call batch through
// the loop's pipeline, or the tools' listing.
func runTool(ctx context.Context, args []string, io stdio) int {
	f := newFlags("tool", toolUsage, io)
	list := f.Bool("list", false, "print the tools, each with a summary and its arguments (as with no NAME)")
	schema := f.Bool("schema", false, "print tool NAME's JSON Schema instead of calling it")
	text := f.Bool("text", false, "print only the result's text, not pi's JSON")
	fail := f.Bool("fail", false, "exit 1 when the result is an error result (isError), like curl --fail")
	rest, code, ok := f.parse(args)
	if !ok {
		return code
	}
	switch {
	case *list && len(rest) > 0:
		return f.usageError("--list takes no tool name")
	case *schema:
		if len(rest) != 1 {
			return f.usageError("--schema wants one tool name")
		}
		return printSchema(io, rest[0])
	case len(rest) == 0:
		return printToolList(io.out)
	case len(rest) > 2:
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
	if code, failed := noResult(res); failed {
		fmt.Fprintf(io.err, "pi-sandbox tool: %v\n", res.Err)
		return code
	}
	if !hasTool(l, name) {
		fmt.Fprintf(io.err, "pi-sandbox tool: no tool %q; the tools are %s (pi-sandbox tool --list)\n", name, toolNames(l))
	}
	dropDeadSpillPath(f.cfg, res)
	if *text {
		if _, err := io.out.Write(textOutput(res)); err != nil {
			fmt.Fprintf(io.err, "pi-sandbox tool: %v\n", err)
			return 1
		}
	} else {
		out, err := loop.MarshalNoEscape(res)
		if err != nil {
			fmt.Fprintf(io.err, "pi-sandbox tool: %v\n", err)
			return 1
		}
		fmt.Fprintf(io.out, "%s\n", escapeJSONControls(out))
	}
	if *fail && res.IsError {
		return 1
	}
	return 0
}

// noResult tells an error that no result can stand for: a transport
// failure (exit 1) or a configuration the target refuses (exit 2).
func noResult(r *loop.Result) (code int, failed bool) {
	switch {
	case !r.IsError || r.Err == nil:
		return 0, false
	case errors.Is(r.Err, ops.ErrConfig):
		return 2, true
	case errors.Is(r.Err, ops.ErrTransport):
		return 1, true
	}
	return 0, false
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
