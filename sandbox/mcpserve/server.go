package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

// NewServer returns an MCP server with every tool of l, each with its own
// JSON Schema; `pi-sandbox serve` runs it on stdin/stdout, and [Handler]
// makes one per session.
//
// The tools are added with Server.AddTool and a raw handler, not the typed
// mcp.AddTool: the SDK then neither unmarshals nor validates the arguments
// (req.Params.Arguments stays json.RawMessage), so every call goes through
// the loop's pipeline — pi's argument preparation and coercions (a number
// sent as "5", edit's legacy forms) run before validation, and failures get
// pi's texts, exactly as in `pi-sandbox tool`.
func NewServer(l *loop.Loop) *mcp.Server {
	return newServer(l, serverConfig{})
}

// serverConfig is what a session of [Handler] adds to a server.
type serverConfig struct {
	// session is the MCP session id the server hands out ("" for the SDK's
	// own); call ids become mcp_SESSION_N so the audit log names it.
	session string
	// call, when set, makes each call's context from the request's; the
	// function it returns is called as the call ends.
	call func(context.Context) (context.Context, func())
}

func newServer(l *loop.Loop, sc serverConfig) *mcp.Server {
	opts := &mcp.ServerOptions{
		Instructions: "Coding tools (read, bash, edit, write, grep, find, ls) running in a sandbox. Paths are relative to the sandbox's working directory.",
	}
	prefix := "mcp_"
	if sc.session != "" {
		id := sc.session
		opts.GetSessionID = func() string { return id }
		prefix = "mcp_" + id + "_"
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "pi-sandbox", Title: "pi-sandbox", Version: "dev"}, opts)
	var ids atomic.Int64
	for _, t := range l.Tools() {
		srv.AddTool(&mcp.Tool{
			Name:        t.Name(),
			Title:       t.Label(),
			Description: t.Description(),
			InputSchema: t.Parameters(),
			Annotations: annotations(t.Name()),
		}, toolHandler(l, t.Name(), prefix, &ids, sc.call))
	}
	return srv
}

func toolHandler(l *loop.Loop, name, prefix string, ids *atomic.Int64, call func(context.Context) (context.Context, func())) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if call != nil {
			var done func()
			ctx, done = call(ctx)
			defer done()
		}
		args := req.Params.Arguments
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		id := fmt.Sprintf("%s%d", prefix, ids.Add(1))
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
			case res.Err != nil && errors.Is(res.Err, ops.ErrTransport):
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
