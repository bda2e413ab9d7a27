package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pi-sandbox/pi-sandbox/loop"
)

func init() {
	register("serve", &command{summary: "serve the tools to another agent over MCP (stdio)", run: runServe})
}

// runServe is `pi-sandbox serve [flags]`: an MCP server on stdin/stdout
// exposing the seven tools, with the same backend and policy flags as the
// other commands. It runs until the client closes stdin or a signal arrives.
func runServe(ctx context.Context, args []string, io stdio) int {
	f := newFlags("serve", "[flags]", io)
	rest, code, ok := f.parse(args)
	if !ok {
		return code
	}
	if len(rest) != 0 {
		return f.usageError("unexpected arguments %q", rest)
	}
	l, closeFn, code := openLoop(ctx, "serve", f.cfg, io)
	if l == nil {
		return code
	}
	defer closeFn()
	t := &stdioTransport{in: readCloser(io.in), out: io.out}
	if err := newMCPServer(l).Run(ctx, t); err != nil && !cleanEnd(err) {
		fmt.Fprintf(io.err, "pi-sandbox serve: %v\n", err)
		return 1
	}
	return 0
}

// cleanEnd is true for the ways a session normally ends: the client closed
// stdin, or a signal cancelled ctx.
func cleanEnd(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe)
}

// newMCPServer registers every tool of l with its own JSON Schema.
//
// The tools are added with Server.AddTool and a raw handler, not the typed
// mcp.AddTool: the SDK then neither unmarshals nor validates the arguments
// (req.Params.Arguments stays json.RawMessage), so every call goes through
// the loop's pipeline — pi's argument preparation and coercions (a number
// sent as "5", edit's legacy forms) run before validation, and failures get
// pi's texts, exactly as in `pi-sandbox tool`.
func newMCPServer(l *loop.Loop) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "pi-sandbox", Title: "pi-sandbox", Version: "dev"}, &mcp.ServerOptions{
		Instructions: "Coding tools (read, bash, edit, write, grep, find, ls) running in a sandbox. Paths are relative to the sandbox's working directory.",
	})
	var ids atomic.Int64
	for _, t := range l.Tools() {
		srv.AddTool(&mcp.Tool{
			Name:        t.Name(),
			Title:       t.Label(),
			Description: t.Description(),
			InputSchema: t.Parameters(),
			Annotations: annotations(t.Name()),
		}, mcpHandler(l, t.Name(), &ids))
	}
	return srv
}

func mcpHandler(l *loop.Loop, name string, ids *atomic.Int64) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := req.Params.Arguments
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		id := fmt.Sprintf("mcp_%d", ids.Add(1))
		token := req.Params.GetProgressToken()
		var n atomic.Int64
		emit := func(ev loop.Event) {
			u, ok := ev.(loop.ToolExecutionUpdate)
			if !ok || token == nil || req.Session == nil {
				return
			}
			// Errors mean the client went away; the call's own context
			// ends it.
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token,
				Progress:      float64(n.Add(1)),
				Message:       progressMessage(u.PartialResult),
			})
		}
		b := l.RunBatch(ctx, nil, []loop.ToolCall{{ID: id, Name: name, Arguments: args}}, emit)
		res := b.Results[0].Result
		if res.IsError && req.Session != nil {
			var blocked *loop.BlockedError
			level, what := mcp.LoggingLevel(""), ""
			switch {
			case errors.As(res.Err, &blocked):
				level, what = "warning", "blocked"
			case transportFailure(res):
				level, what = "error", "failed (backend lost)"
			}
			if level != "" {
				_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{
					Level:  level,
					Logger: "pi-sandbox",
					Data:   fmt.Sprintf("%s call %s: %s", name, what, resultFirstLine(res)),
				})
			}
		}
		return toMCPResult(res), nil
	}
}

// toMCPResult maps a loop result: text and image blocks, isError, and pi's
// details under _meta["pi-sandbox/details"] (they are not structured
// content: there is no output schema, and clients show structured content
// instead of the text).
func toMCPResult(r *loop.Result) *mcp.CallToolResult {
	out := &mcp.CallToolResult{IsError: r.IsError, Content: []mcp.Content{}}
	for _, c := range r.Content {
		switch c.Type {
		case "image":
			data, err := base64.StdEncoding.DecodeString(c.Data)
			if err != nil {
				out.Content = append(out.Content, &mcp.TextContent{Text: "[image with invalid base64 data]"})
				continue
			}
			out.Content = append(out.Content, &mcp.ImageContent{Data: data, MIMEType: c.MimeType})
		default:
			out.Content = append(out.Content, &mcp.TextContent{Text: c.Text})
		}
	}
	if r.Details != nil {
		if b, err := loop.MarshalNoEscape(r.Details); err == nil && string(b) != "{}" && string(b) != "null" {
			out.Meta = mcp.Meta{"pi-sandbox/details": json.RawMessage(b)}
		}
	}
	return out
}

// annotations are MCP's hints about each tool.
func annotations(name string) *mcp.ToolAnnotations {
	yes, no := true, false
	switch name {
	case "read", "grep", "find", "ls":
		return &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &no}
	case "write", "edit":
		return &mcp.ToolAnnotations{DestructiveHint: &yes, OpenWorldHint: &no}
	case "bash":
		return &mcp.ToolAnnotations{DestructiveHint: &yes, OpenWorldHint: &yes}
	}
	return nil
}

// progressMessage is the last line of a partial result (bash's output so
// far), at most 512 bytes: progress notifications are for a person watching.
func progressMessage(r *loop.Result) string {
	if r == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	s := strings.TrimRight(b.String(), "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 512 {
		s = strings.ToValidUTF8(s[len(s)-512:], "")
	}
	return s
}

func resultFirstLine(r *loop.Result) string {
	if len(r.Content) == 0 {
		return ""
	}
	s, _, _ := strings.Cut(r.Content[0].Text, "\n")
	return s
}

func readCloser(r io.Reader) io.ReadCloser {
	if rc, ok := r.(io.ReadCloser); ok {
		return rc
	}
	if r == nil {
		r = strings.NewReader("")
	}
	return io.NopCloser(r)
}

// nopWriteCloser keeps stdout open when the transport closes.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
