package mcpserve_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pi-sandbox/pi-sandbox/sandbox/mcpserve"
)

// pacedCommand writes 40 chunks of 20 numbered lines, a little apart, so
// that the call streams progress; pacedOutput is what it writes.
const pacedCommand = `i=1; while [ $i -le 40 ]; do seq $((i*1000)) $((i*1000+19)); sleep 0.02; i=$((i+1)); done`

func pacedOutput() string {
	var b strings.Builder
	for i := 1; i <= 40; i++ {
		for j := range 20 {
			fmt.Fprintln(&b, i*1000+j)
		}
	}
	return b.String()
}

// cutChunks is how many lines cutCommand writes, one at a time: line i
// only once the file go.(i-1) exists in gate (the test makes it when it
// has seen i-1 progress events), so every line is its own event however
// loaded the machine is; cutOutput is what it writes.
const cutChunks = 110

func cutCommand(gate string) string {
	return fmt.Sprintf(`i=1; while [ $i -le %d ]; do echo $i; while [ ! -e %s/go.$i ]; do sleep 0.005; done; i=$((i+1)); done`, cutChunks, gate)
}

func cutOutput() string {
	var b strings.Builder
	for i := 1; i <= cutChunks; i++ {
		fmt.Fprintln(&b, i)
	}
	return b.String()
}

type sseEvent struct{ id, data string }

// readEvent reads one SSE event.
func readEvent(br *bufio.Reader) (sseEvent, error) {
	var ev sseEvent
	seen := false
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return ev, err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if seen {
				return ev, nil
			}
		case strings.HasPrefix(line, "id:"):
			ev.id, seen = strings.TrimSpace(line[3:]), true
		case strings.HasPrefix(line, "data:"):
			ev.data, seen = ev.data+strings.TrimPrefix(line[5:], " "), true
		case strings.HasPrefix(line, "event:"), strings.HasPrefix(line, "retry:"):
			seen = true
		}
	}
}

func resume(t *testing.T, url, session, lastID string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Last-Event-ID", lastID)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestResumeEveryEvent: a client that drops the connection after every
// event of a streaming call (at least 100 times in a row) and reconnects
// with GET and Last-Event-ID gets every progress notification once, in
// order, and the whole result.
func TestResumeEveryEvent(t *testing.T) {
	f := newFixture(t, mcpserve.Options{})
	url := f.url + "/mcp"
	session := initialize(t, url, testToken)
	gate := t.TempDir()
	call := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"bash","arguments":{"command":%q},"_meta":{"progressToken":"p"}}}`, cutCommand(gate))
	resp := post(t, url, testToken, session, call)
	var progress []float64
	var result string
	cuts, lastID := 0, ""
	for result == "" {
		if resp.StatusCode != 200 {
			t.Fatalf("after %d cuts: %s", cuts, resp.Status)
		}
		ev, err := readEvent(bufio.NewReader(resp.Body))
		resp.Body.Close() // the cut
		if err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		if ev.id != "" {
			lastID = ev.id
		}
		if ev.data != "" {
			var msg struct {
				Method string `json:"method"`
				Params struct {
					Progress float64 `json:"progress"`
				} `json:"params"`
				Result *struct {
					Content []struct{ Text string } `json:"content"`
				} `json:"result"`
			}
			if err := json.Unmarshal([]byte(ev.data), &msg); err != nil {
				t.Fatal(err)
			}
			switch {
			case msg.Method == "notifications/progress":
				progress = append(progress, msg.Params.Progress)
				os.WriteFile(filepath.Join(gate, fmt.Sprintf("go.%d", len(progress))), nil, 0o644)
			case msg.Result != nil:
				result = msg.Result.Content[0].Text
			}
		}
		if result != "" {
			break
		}
		if lastID == "" {
			t.Fatal("an event without an id")
		}
		cuts++
		resp = resume(t, url, session, lastID)
		// 409: the server has not yet seen the cut connection go and
		// still holds the stream for it; a client tries again.
		for tries := 0; resp.StatusCode == http.StatusConflict && tries < 200; tries++ {
			resp.Body.Close()
			time.Sleep(10 * time.Millisecond)
			resp = resume(t, url, session, lastID)
		}
	}
	for i, p := range progress {
		if p != float64(i+1) {
			t.Fatalf("progress %v: event %d is %v (lost or repeated)", progress, i, p)
		}
	}
	if sha256.Sum256([]byte(strings.TrimSpace(result))) != sha256.Sum256([]byte(strings.TrimSpace(cutOutput()))) {
		t.Errorf("result differs from the output: %d bytes, want %d", len(result), len(cutOutput()))
	}
	t.Logf("%d cuts, %d progress events", cuts, len(progress))
	if cuts < 100 { // the 100 forced disconnects in a row
		t.Errorf("only %d cuts: the call streamed too little", cuts)
	}
}

// TestResumeLost: a Last-Event-ID older than the session's replay buffer
// keeps is a 400 that says so.
func TestResumeLost(t *testing.T) {
	f := newFixture(t, mcpserve.Options{ReplayBytes: 100})
	url := f.url + "/mcp"
	session := initialize(t, url, testToken)
	call := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"bash","arguments":{"command":%q},"_meta":{"progressToken":"p"}}}`, pacedCommand)
	resp := post(t, url, testToken, session, call)
	br := bufio.NewReader(resp.Body)
	first, err := readEvent(br)
	if err != nil || first.id == "" {
		t.Fatalf("first event %+v: %v", first, err)
	}
	// Read on to the end (the result) without keeping anything, then ask
	// for everything after the first event again.
	io.Copy(io.Discard, br)
	resp.Body.Close()
	resp = resume(t, url, session, first.id)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), "no longer kept") {
		t.Errorf("resuming past the buffer: %s %q", resp.Status, b)
	}
}

// cutOnce cuts the first tools/call response it sees after n bytes.
type cutOnce struct {
	mu   sync.Mutex
	done bool
	n    int
}

func (c *cutOnce) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil || !strings.Contains(string(body), `"tools/call"`) {
		return resp, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.done {
		c.done = true
		resp.Body = &cutBody{ReadCloser: resp.Body, left: c.n}
	}
	return resp, nil
}

type cutBody struct {
	io.ReadCloser
	left int
}

func (b *cutBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		b.ReadCloser.Close()
		return 0, io.ErrUnexpectedEOF
	}
	if len(p) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= n
	return n, err
}

// TestResumeSDKClient: the go-sdk client whose call stream is cut
// reconnects by itself and gets the whole result, each progress
// notification once.
func TestResumeSDKClient(t *testing.T) {
	f := newFixture(t, mcpserve.Options{})
	var mu sync.Mutex
	var progress []float64
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, req.Params.Progress)
			mu.Unlock()
		},
	})
	tr := &mcp.StreamableClientTransport{Endpoint: f.url + "/mcp", HTTPClient: &http.Client{Transport: bearer{testToken, &cutOnce{n: 600}}}, DisableStandaloneSSE: true}
	cs, err := c.Connect(t.Context(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	params := &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": pacedCommand}}
	params.SetProgressToken("p")
	res, err := cs.CallTool(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	got := res.Content[0].(*mcp.TextContent).Text
	if sha256.Sum256([]byte(strings.TrimSpace(got))) != sha256.Sum256([]byte(strings.TrimSpace(pacedOutput()))) {
		t.Errorf("result differs from the output: %d bytes", len(got))
	}
	mu.Lock()
	defer mu.Unlock()
	// Notifications may be handled concurrently: compare as a set.
	slices.Sort(progress)
	for i, p := range progress {
		if p != float64(i+1) {
			t.Fatalf("progress %v: lost or repeated", progress)
		}
	}
	if len(progress) == 0 {
		t.Error("no progress")
	}
}
