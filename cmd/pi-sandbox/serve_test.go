package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/client"
	mcpgotransport "github.com/mark3labs/mcp-go/client/transport"
	mcpgotypes "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pi-sandbox/pi-sandbox/sandbox/open"
)

// mcpClient is what the end-to-end checks need of an MCP client library.
type mcpClient interface {
	listTools(ctx context.Context) (map[string]json.RawMessage, error)
	// call runs a tool; with progress set it sends a progress token and
	// returns the progress messages received for it.
	call(ctx context.Context, name string, args any, progress bool) (*mcpOutcome, error)
}

type mcpOutcome struct {
	texts    []string
	images   []mcpImage
	isError  bool
	progress []string
}

type mcpImage struct {
	mime string
	data []byte
}

func (o *mcpOutcome) text() string { return strings.Join(o.texts, "") }

// serveArgs starts `pi-sandbox serve` in dir, with a policy.
func serveArgs(dir string) []string {
	return []string{"serve", "--workdir", dir, "--deny-command", "shutdown", "--redact-env", "PI_SERVE_TEST_SECRET"}
}

func writePNG(t *testing.T, name string) {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 3, 2))
	img.Set(1, 1, color.RGBA{255, 0, 0, 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkMCP lists the tools and runs all seven (and a few error paths)
// through c.
func checkMCP(t *testing.T, c mcpClient, dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	tools, err := c.listTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := open.Open(ctx, open.Config{WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if len(tools) != len(sb.Tools()) {
		t.Errorf("%d tools listed, want %d", len(tools), len(sb.Tools()))
	}
	for _, tool := range sb.Tools() {
		got, ok := tools[tool.Name()]
		if !ok {
			t.Errorf("tool %s not listed", tool.Name())
			continue
		}
		var a, b any
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(tool.Parameters(), &b); err != nil {
			t.Fatal(err)
		}
		// mcp-go's typed schema writes "required": [] when absent.
		for _, m := range []any{a, b} {
			if m, ok := m.(map[string]any); ok {
				if r, ok := m["required"].([]any); ok && len(r) == 0 {
					delete(m, "required")
				}
			}
		}
		if ja, jb := mustJSON(a), mustJSON(b); ja != jb {
			t.Errorf("%s schema:\n got %s\nwant %s", tool.Name(), ja, jb)
		}
	}

	run := func(name string, args any, progress bool) *mcpOutcome {
		t.Helper()
		out, err := c.call(ctx, name, args, progress)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return out
	}
	if o := run("write", map[string]any{"path": "a.txt", "content": "hello <&>\nsecond line\n"}, false); o.isError || o.text() != "Successfully wrote to a.txt" {
		t.Errorf("write: %+v", o)
	}
	if o := run("read", map[string]any{"path": "a.txt"}, false); o.isError || o.text() != "hello <&>\nsecond line\n" {
		t.Errorf("read: %+v", o)
	}
	// pi's coercion runs before validation: a string offset is accepted.
	if o := run("read", map[string]any{"path": "a.txt", "offset": "2"}, false); o.isError || o.text() != "second line\n" {
		t.Errorf("read with a string offset: %+v", o)
	}
	if o := run("edit", map[string]any{"path": "a.txt", "edits": []any{map[string]any{"oldText": "hello", "newText": "bye"}}}, false); o.isError || !strings.HasPrefix(o.text(), "Successfully replaced") {
		t.Errorf("edit: %+v", o)
	}
	if o := run("ls", map[string]any{}, false); o.isError || !strings.Contains(o.text(), "a.txt") {
		t.Errorf("ls: %+v", o)
	}
	if o := run("find", map[string]any{"pattern": "*.txt"}, false); o.isError || strings.TrimSpace(o.text()) != "a.txt" {
		t.Errorf("find: %+v", o)
	}
	if o := run("grep", map[string]any{"pattern": "bye"}, false); o.isError || !strings.Contains(o.text(), "a.txt:1: bye <&>") {
		t.Errorf("grep: %+v", o)
	}
	o := run("bash", map[string]any{"command": "echo one; sleep 0.4; echo two; sleep 0.4; echo three", "timeout": "20"}, true)
	if o.isError || o.text() != "one\ntwo\nthree\n" {
		t.Errorf("bash: %+v", o)
	}
	if !slices.Contains(o.progress, "one") || !slices.Contains(o.progress, "two") {
		t.Errorf("bash progress messages %q, want one and two among them", o.progress)
	}

	writePNG(t, filepath.Join(dir, "dot.png"))
	o = run("read", map[string]any{"path": "dot.png"}, false)
	if o.isError || len(o.images) != 1 || o.images[0].mime != "image/png" || !bytes.HasPrefix(o.images[0].data, []byte("\x89PNG")) {
		t.Errorf("read image: error %v, texts %q, %d images", o.isError, o.texts, len(o.images))
	}

	// Error results: a tool error, a validation failure with pi's text, a
	// policy block, and confinement.
	if o := run("read", map[string]any{"path": "nope.txt"}, false); !o.isError || !strings.HasPrefix(o.text(), "ENOENT: no such file or directory") {
		t.Errorf("missing file: %+v", o)
	}
	if o := run("bash", map[string]any{"timeout": 3}, false); !o.isError || !strings.HasPrefix(o.text(), "Validation failed for tool \"bash\":\n  - command: missing") {
		t.Errorf("validation: %+v", o)
	}
	if o := run("bash", map[string]any{"command": "shutdown -h now"}, false); !o.isError || o.text() != `Command blocked by policy: deny prefix "shutdown"` {
		t.Errorf("policy: %+v", o)
	}
	if o := run("read", map[string]any{"path": "/etc/hostname"}, false); !o.isError || !strings.Contains(o.text(), "outside the sandbox") {
		t.Errorf("confinement: %+v", o)
	}
	if o := run("bash", map[string]any{"command": `echo "key=$PI_SERVE_TEST_SECRET"`}, false); o.isError || o.text() != "key=[REDACTED]\n" {
		t.Errorf("redaction: %+v", o)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func serveEnv(t *testing.T) {
	t.Setenv("PI_SERVE_TEST_SECRET", "very-secret-value")
	t.Setenv("PI_SANDBOX_TEST_TOOLS", "")
}

func TestServeGoSDKClient(t *testing.T) {
	serveEnv(t)
	dir := t.TempDir()
	gc := &goSDKClient{progress: map[string][]string{}}
	logs := make(chan string, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			logs <- fmt.Sprintf("%s %v", req.Params.Level, req.Params.Data)
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			gc.mu.Lock()
			defer gc.mu.Unlock()
			tok := fmt.Sprint(req.Params.ProgressToken)
			gc.progress[tok] = append(gc.progress[tok], req.Params.Message)
		},
	})
	cmd := exec.Command("pi-sandbox", serveArgs(dir)...)
	cmd.Stderr = &syncBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cs.Close(); err != nil {
			t.Logf("close: %v (stderr %s)", err, cmd.Stderr)
		}
	}()
	gc.cs = cs
	checkMCP(t, gc, dir)

	// A blocked call is also reported as a log message once the client
	// asked for them (logging/setLevel, for older protocol versions).
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	// Protocol 2026-07-28 takes the level from each request's _meta.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{
		Meta:      mcp.Meta{mcp.MetaKeyLogLevel: "info"},
		Name:      "bash",
		Arguments: map[string]any{"command": "shutdown now"},
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-logs:
		if want := `warning bash call blocked: Command blocked by policy: deny prefix "shutdown"`; got != want {
			t.Errorf("log message %q, want %q", got, want)
		}
	case <-ctx.Done():
		t.Fatal("no log message for a blocked call")
	}

	// Cancelling a request (notifications/cancelled) kills the command.
	cctx, ccancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := gc.call(cctx, "bash", map[string]any{"command": "echo $$ > pid; exec sleep 60"}, false)
		done <- err
	}()
	pidFile := filepath.Join(dir, "pid")
	pid := waitFor(t, func() string {
		b, _ := os.ReadFile(pidFile)
		if !bytes.HasSuffix(b, []byte("\n")) {
			return ""
		}
		return strings.TrimSpace(string(b))
	})
	ccancel()
	if err := <-done; err == nil {
		t.Error("the cancelled call returned no error")
	}
	waitFor(t, func() string {
		if _, err := os.Stat("/proc/" + pid); os.IsNotExist(err) {
			return "gone"
		}
		return ""
	})
	// The server still answers.
	if o, err := gc.call(ctx, "bash", map[string]any{"command": "echo after"}, false); err != nil || o.text() != "after\n" {
		t.Errorf("after cancel: %+v, %v", o, err)
	}
}

// waitFor polls f (every 10ms, up to 10s) until it returns non-empty: the
// states it waits for are in another process, with nothing to wait on.
func waitFor(t *testing.T, f func() string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if v := f(); v != "" {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type goSDKClient struct {
	cs       *mcp.ClientSession
	mu       sync.Mutex
	progress map[string][]string
	n        int
}

func (c *goSDKClient) listTools(ctx context.Context) (map[string]json.RawMessage, error) {
	res, err := c.cs.ListTools(ctx, nil)
	if err != nil {
		return nil, err
	}
	out := map[string]json.RawMessage{}
	for _, tool := range res.Tools {
		b, err := json.Marshal(tool.InputSchema)
		if err != nil {
			return nil, err
		}
		out[tool.Name] = b
	}
	return out, nil
}

func (c *goSDKClient) call(ctx context.Context, name string, args any, progress bool) (*mcpOutcome, error) {
	params := &mcp.CallToolParams{Name: name, Arguments: args}
	var tok string
	if progress {
		c.mu.Lock()
		c.n++
		tok = fmt.Sprintf("go-sdk-%d", c.n)
		c.mu.Unlock()
		params.SetProgressToken(tok)
	}
	res, err := c.cs.CallTool(ctx, params)
	if err != nil {
		return nil, err
	}
	out := &mcpOutcome{isError: res.IsError}
	for _, ct := range res.Content {
		switch x := ct.(type) {
		case *mcp.TextContent:
			out.texts = append(out.texts, x.Text)
		case *mcp.ImageContent:
			out.images = append(out.images, mcpImage{x.MIMEType, x.Data})
		default:
			return nil, fmt.Errorf("unexpected content %T", ct)
		}
	}
	if progress {
		// Notifications precede the response on the wire and the SDK
		// handles them in order.
		c.mu.Lock()
		out.progress = c.progress[tok]
		c.mu.Unlock()
	}
	return out, nil
}

func TestServeMCPGoClient(t *testing.T) {
	serveEnv(t)
	dir := t.TempDir()
	exe, err := exec.LookPath("pi-sandbox")
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuffer{}
	tr := mcpgotransport.NewStdioWithOptions(exe, nil, serveArgs(dir), mcpgotransport.WithCommandStderrWriter(stderr))
	c := mcpgo.NewClient(tr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	mc := &mcpGoClient{c: c, progress: map[string][]string{}}
	c.OnNotification(func(n mcpgotypes.JSONRPCNotification) {
		if n.Method != "notifications/progress" {
			return
		}
		mc.mu.Lock()
		defer mc.mu.Unlock()
		tok := fmt.Sprint(n.Params.AdditionalFields["progressToken"])
		msg, _ := n.Params.AdditionalFields["message"].(string)
		mc.progress[tok] = append(mc.progress[tok], msg)
	})
	var init mcpgotypes.InitializeRequest
	init.Params.ClientInfo = mcpgotypes.Implementation{Name: "test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v (stderr %s)", err, stderr)
	}
	checkMCP(t, mc, dir)
}

type mcpGoClient struct {
	c        *mcpgo.Client
	mu       sync.Mutex
	progress map[string][]string
	n        int
}

func (c *mcpGoClient) listTools(ctx context.Context) (map[string]json.RawMessage, error) {
	res, err := c.c.ListTools(ctx, mcpgotypes.ListToolsRequest{})
	if err != nil {
		return nil, err
	}
	out := map[string]json.RawMessage{}
	for _, tool := range res.Tools {
		b := tool.RawInputSchema
		if b == nil {
			if b, err = json.Marshal(tool.InputSchema); err != nil {
				return nil, err
			}
		}
		out[tool.Name] = b
	}
	return out, nil
}

func (c *mcpGoClient) call(ctx context.Context, name string, args any, progress bool) (*mcpOutcome, error) {
	var req mcpgotypes.CallToolRequest
	req.Params.Name = name
	req.Params.Arguments = args
	var tok string
	if progress {
		c.mu.Lock()
		c.n++
		tok = fmt.Sprintf("mcp-go-%d", c.n)
		c.mu.Unlock()
		req.Params.Meta = &mcpgotypes.Meta{ProgressToken: tok}
	}
	res, err := c.c.CallTool(ctx, req)
	if err != nil {
		return nil, err
	}
	out := &mcpOutcome{isError: res.IsError}
	for _, ct := range res.Content {
		switch x := ct.(type) {
		case mcpgotypes.TextContent:
			out.texts = append(out.texts, x.Text)
		case mcpgotypes.ImageContent:
			data, err := base64.StdEncoding.DecodeString(x.Data)
			if err != nil {
				return nil, err
			}
			out.images = append(out.images, mcpImage{x.MIMEType, data})
		default:
			return nil, fmt.Errorf("unexpected content %T", ct)
		}
	}
	if progress {
		// mcp-go may deliver notifications on another goroutine: wait
		// briefly for the ones already sent before the response.
		deadline := time.Now().Add(2 * time.Second)
		for {
			c.mu.Lock()
			out.progress = slices.Clone(c.progress[tok])
			c.mu.Unlock()
			if slices.Contains(out.progress, "two") || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return out, nil
}
