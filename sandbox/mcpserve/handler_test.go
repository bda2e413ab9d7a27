package mcpserve_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/client"
	mcpgotransport "github.com/mark3labs/mcp-go/client/transport"
	mcpgotypes "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pi-sandbox/pi-sandbox/sandbox"
	"github.com/pi-sandbox/pi-sandbox/sandbox/mcpserve"
	"github.com/pi-sandbox/pi-sandbox/sandbox/open"
)

const testToken = "secret-token"

// fixture is a handler over local sandboxes, one subdirectory of root per
// session, served by an httptest server; logs receives the handler's
// lines.
type fixture struct {
	h    *mcpserve.Handler
	srv  *httptest.Server
	url  string
	root string
	logs chan string
}

func newFixture(t *testing.T, opts mcpserve.Options) *fixture {
	t.Helper()
	f := &fixture{root: t.TempDir(), logs: make(chan string, 1024)}
	if opts.NewSandbox == nil {
		opts.NewSandbox = func(ctx context.Context, id string) (*sandbox.Sandbox, error) {
			dir := filepath.Join(f.root, id)
			if err := os.Mkdir(dir, 0o700); err != nil {
				return nil, err
			}
			return open.Open(ctx, open.Config{Backend: "local", WorkDir: dir})
		}
	}
	if opts.Tokens == nil {
		opts.Tokens = []string{testToken, "other-token"}
	}
	opts.Logf = func(format string, a ...any) {
		select {
		case f.logs <- fmt.Sprintf(format, a...):
		default:
		}
	}
	h, err := mcpserve.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	f.h = h
	f.srv = httptest.NewServer(h)
	f.url = f.srv.URL
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := h.Close(ctx); err != nil {
			t.Error(err)
		}
		f.srv.Close()
	})
	return f
}

// waitLog waits for a log line containing want.
func (f *fixture) waitLog(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	var seen []string
	for {
		select {
		case l := <-f.logs:
			if strings.Contains(l, want) {
				return
			}
			seen = append(seen, l)
		case <-timeout:
			t.Fatalf("no log line with %q, only %q", want, seen)
		}
	}
}

// bearer adds the Authorization header to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func sdkClient(t *testing.T, url string, rt http.RoundTripper) *mcp.ClientSession {
	t.Helper()
	if rt == nil {
		rt = http.DefaultTransport
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{testToken, rt}}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return cs
}

func sdkCall(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.IsError {
		t.Fatalf("%s: error result %s", name, b.String())
	}
	return b.String()
}

func mcpgoClient(t *testing.T, url string) *mcpgo.Client {
	t.Helper()
	c, err := mcpgo.NewStreamableHttpClient(url, mcpgotransport.WithHTTPBasicClient(&http.Client{Transport: bearer{testToken, http.DefaultTransport}}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	var init mcpgotypes.InitializeRequest
	init.Params.ClientInfo = mcpgotypes.Implementation{Name: "test", Version: "1"}
	init.Params.ProtocolVersion = "2025-06-18"
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatalf("mcp-go initialize: %v", err)
	}
	return c
}

func mcpgoCall(t *testing.T, c *mcpgo.Client, name string, args map[string]any) string {
	t.Helper()
	var req mcpgotypes.CallToolRequest
	req.Params.Name, req.Params.Arguments = name, args
	res, err := c.CallTool(t.Context(), req)
	if err != nil {
		t.Fatalf("mcp-go %s: %v", name, err)
	}
	var b strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(mcpgotypes.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.IsError {
		t.Fatalf("mcp-go %s: error result %s", name, b.String())
	}
	return b.String()
}

// TestTwoClientsOwnSandboxes: a go-sdk session and an mcp-go session each
// write and read their own file and do not see the other's; closing a
// client ends its session and its sandbox.
func TestTwoClientsOwnSandboxes(t *testing.T) {
	f := newFixture(t, mcpserve.Options{})
	a := sdkClient(t, f.url+"/mcp", nil)
	b := mcpgoClient(t, f.url+"/mcp")
	sdkCall(t, a, "write", map[string]any{"path": "a.txt", "content": "from a"})
	mcpgoCall(t, b, "write", map[string]any{"path": "b.txt", "content": "from b"})
	if got := sdkCall(t, a, "read", map[string]any{"path": "a.txt"}); got != "from a" {
		t.Errorf("a reads %q", got)
	}
	if got := mcpgoCall(t, b, "read", map[string]any{"path": "b.txt"}); got != "from b" {
		t.Errorf("b reads %q", got)
	}
	if got := sdkCall(t, a, "ls", map[string]any{}); strings.Contains(got, "b.txt") {
		t.Errorf("a sees b's file: %q", got)
	}
	if got := mcpgoCall(t, b, "bash", map[string]any{"command": "ls; cat ../*/a.txt 2>&1 | head -c 0; pwd"}); strings.Contains(got, "a.txt") {
		t.Errorf("b sees a's file: %q", got)
	}
	if n := f.h.Sessions(); n != 2 {
		t.Errorf("%d sessions, want 2", n)
	}
	a.Close() // DELETE
	f.waitLog(t, "ended (deleted)")
	b.Close()
	f.waitLog(t, "ended (deleted)")
	if n := f.h.Sessions(); n != 0 {
		t.Errorf("%d sessions after both closed", n)
	}
}

// TestIdleEnds: a session without requests ends after SessionIdle; one
// whose call outlasts SessionIdle is not ended under it.
func TestIdleEnds(t *testing.T) {
	f := newFixture(t, mcpserve.Options{SessionIdle: 300 * time.Millisecond})
	cs := sdkClient(t, f.url+"/mcp", nil)
	if got := sdkCall(t, cs, "bash", map[string]any{"command": "sleep 1; echo done"}); !strings.Contains(got, "done") {
		t.Errorf("a call longer than the idle time: %q", got)
	}
	f.waitLog(t, "ended (idle)")
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ls", Arguments: map[string]any{}}); err == nil {
		t.Error("a call on an idle-ended session succeeded")
	}
}

func post(t *testing.T, url, token, session, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// initialize opens a session with raw HTTP and returns its id.
func initialize(t *testing.T, url, token string) string {
	t.Helper()
	resp := post(t, url, token, "", initBody)
	io.Copy(io.Discard, resp.Body) // the whole answer: a client gone early fails initialize
	resp.Body.Close()
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || id == "" {
		t.Fatalf("initialize: %s, session %q", resp.Status, id)
	}
	resp = post(t, url, token, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp.Body.Close()
	return id
}

// TestRefusals: 401 without detail, 404 for another token's session, 413
// for a body over 32 MiB (by its length and while read), 503 with
// Retry-After past MaxSessions, and a sandbox that cannot be made is a
// JSON-RPC error with the reason.
func TestRefusals(t *testing.T) {
	f := newFixture(t, mcpserve.Options{MaxSessions: 1})
	url := f.url + "/mcp"
	for _, tok := range []string{"", "wrong"} {
		resp := post(t, url, tok, "", initBody)
		var body bytes.Buffer
		body.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 401 || body.Len() != 0 {
			t.Errorf("token %q: %s %q", tok, resp.Status, body.String())
		}
	}
	id := initialize(t, url, testToken)
	resp := post(t, url, "other-token", id, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("another token's session: %s", resp.Status)
	}
	resp = post(t, url, testToken, id, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("own session: %s", resp.Status)
		for len(f.logs) > 0 {
			t.Log(<-f.logs)
		}
	}
	resp = post(t, url, testToken, "", initBody)
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("past MaxSessions: %s, Retry-After %q", resp.Status, resp.Header.Get("Retry-After"))
	}
	// 413 by Content-Length, before the body is read; and for a chunked
	// body that passes the limit while read.
	host := strings.TrimPrefix(f.url, "http://")
	if st := rawStatus(t, host, id, "Content-Length: 40000000\r\n", nil); st != "413" {
		t.Errorf("Content-Length over the limit: %s", st)
	}
	chunk := append([]byte(fmt.Sprintf("%x\r\n", 1<<20)), append(bytes.Repeat([]byte(" "), 1<<20), "\r\n"...)...)
	if st := rawStatus(t, host, id, "Transfer-Encoding: chunked\r\n", chunk); st != "413" {
		t.Errorf("chunked body over the limit: %s", st)
	}

	// A sandbox that cannot be made.
	g := newFixture(t, mcpserve.Options{NewSandbox: func(context.Context, string) (*sandbox.Sandbox, error) {
		return nil, fmt.Errorf("no such image")
	}})
	resp = post(t, g.url+"/mcp", testToken, "", initBody)
	var body bytes.Buffer
	body.ReadFrom(resp.Body)
	resp.Body.Close()
	if !strings.Contains(body.String(), "no such image") || !strings.Contains(body.String(), `"error"`) {
		t.Errorf("failed sandbox: %s %s", resp.Status, body.String())
	}
	if n := g.h.Sessions(); n != 0 {
		t.Errorf("%d sessions after a failed one", n)
	}
}

// rawStatus sends a POST with extra headers on a TCP connection, then
// chunk over and over until the server answers, and returns the status
// code.
func rawStatus(t *testing.T, host, session, extra string, chunk []byte) string {
	t.Helper()
	c, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-11-25\r\n%s\r\n", host, testToken, session, extra)
	if chunk != nil {
		go func() {
			for i := 0; i < 64; i++ {
				if _, err := c.Write(chunk); err != nil {
					return
				}
			}
		}()
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err.Error()
	}
	if f := strings.Fields(line); len(f) > 1 {
		return f[1]
	}
	return line
}

// TestManySessions: 16 sessions of 5 calls each, in parallel.
func TestManySessions(t *testing.T) {
	f := newFixture(t, mcpserve.Options{})
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
			cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: f.url + "/mcp", HTTPClient: &http.Client{Transport: bearer{testToken, http.DefaultTransport}}, DisableStandaloneSSE: true}, nil)
			if err != nil {
				t.Error(err)
				return
			}
			defer cs.Close()
			for j := range 5 {
				want := fmt.Sprintf("s%d-c%d", i, j)
				res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "echo " + want + " > f; cat f"}})
				if err != nil {
					t.Error(err)
					return
				}
				if got := res.Content[0].(*mcp.TextContent).Text; strings.TrimSpace(got) != want {
					t.Errorf("session %d call %d: %q", i, j, got)
				}
			}
		}()
	}
	wg.Wait()
}

// TestCancelKillsTree: a call the client cancels (notifications/cancelled)
// has its process tree killed.
func TestCancelKillsTree(t *testing.T) {
	f := newFixture(t, mcpserve.Options{})
	cs := sdkClient(t, f.url+"/mcp", nil)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "sleep 60 & echo $! > pid; wait"}})
		done <- err
	}()
	// The pid file is the marker that the tree runs.
	var pid string
	deadline := time.Now().Add(20 * time.Second)
	for pid == "" {
		if time.Now().After(deadline) {
			t.Fatal("the call never started")
		}
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "cat pid 2>/dev/null"}})
		if err != nil {
			t.Fatal(err)
		}
		pid = strings.TrimSpace(res.Content[0].(*mcp.TextContent).Text)
		if strings.Contains(pid, "no output") || strings.Contains(pid, "exit") {
			pid = ""
		}
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the cancelled call returned no error")
	}
	for {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "kill -0 " + pid + " 2>/dev/null && echo alive || echo gone"}})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(res.Content[0].(*mcp.TextContent).Text, "gone") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sleep %s survives the cancel", pid)
		}
	}
}
