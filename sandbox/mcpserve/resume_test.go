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
	"regexp"
	"slices"
	"strconv"
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

// bulkCommand writes 200 MiB of "y\n" (GNU head's M is MiB) as fast as
// the pipe takes it: bulkLines lines.
const (
	bulkCommand = `yes | head -c 200M`
	bulkLines   = 100 << 20
)

// bulkHash is the SHA-256 of bulkCommand's output, made in pieces.
func bulkHash() []byte {
	piece := []byte(strings.Repeat("y\n", 32<<10)) // 64 KiB
	h := sha256.New()
	for range bulkLines * 2 / len(piece) {
		h.Write(piece)
	}
	return h.Sum(nil)
}

// spillBytes is the size of the saved outputs of the local sandboxes
// (sandbox/open keeps them under TMPDIR), for the log only.
func spillBytes() int64 {
	files, _ := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("pi-sandbox-%d", os.Getuid()), "spill", "*", "*"))
	var n int64
	for _, p := range files {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
	}
	return n
}

// TestResumeBulk: a client cut in the middle of a call that writes 200 MiB
// as fast as it can reconnects with Last-Event-ID and gets every event it
// missed once — the event ids and the progress values go on by one across
// the cut — and then the result, the tail of the output with pi's "Full
// output" note; the file it names holds every byte of the output once.
// The progress of such a call stays well inside the replay buffer: bash
// sends at most one update per throttle interval, however fast the
// command writes.
func TestResumeBulk(t *testing.T) {
	f := newFixture(t, mcpserve.Options{})
	url := f.url + "/mcp"
	session := initialize(t, url, testToken)
	call := fmt.Sprintf(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"bash","arguments":{"command":%q},"_meta":{"progressToken":"bulk"}}}`, bulkCommand)
	start := time.Now()
	resp := post(t, url, testToken, session, call)
	if resp.StatusCode != 200 {
		t.Fatalf("call: %s", resp.Status)
	}

	type result struct {
		IsError bool `json:"isError"`
		Content []struct {
			Type, Text string
		} `json:"content"`
		Meta struct {
			Details struct {
				FullOutputPath string `json:"fullOutputPath"`
			} `json:"pi-sandbox/details"`
		} `json:"_meta"`
	}
	var (
		stream   string // the call's stream, from the first event id
		next     int    // the index the next event id must have
		lastID   string
		progress []float64
		messages []string
		res      *result
		// What the client received: all of it, and from the cut on (what
		// the session had to keep for it).
		events, bytes, maxBytes int
		cutEvents, cutBytes     int
		cut                     bool
	)
	// take checks and records one event.
	take := func(ev sseEvent) {
		t.Helper()
		i := strings.LastIndexByte(ev.id, '_')
		if i < 0 {
			t.Fatalf("event %q: the id %q is not STREAM_N", ev.data, ev.id)
		}
		idx, err := strconv.Atoi(ev.id[i+1:])
		if err != nil {
			t.Fatalf("event id %q: %v", ev.id, err)
		}
		if stream == "" {
			stream = ev.id[:i]
		}
		if ev.id[:i] != stream || idx != next {
			t.Fatalf("event id %q after %q (%d events, cut: %v): want %s_%d (lost or repeated)", ev.id, lastID, events, cut, stream, next)
		}
		next++
		lastID = ev.id
		events++
		bytes += len(ev.data)
		maxBytes = max(maxBytes, len(ev.data))
		if cut {
			cutEvents++
			cutBytes += len(ev.data)
		}
		if ev.data == "" { // the stream's priming event
			return
		}
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Progress float64 `json:"progress"`
				Message  string  `json:"message"`
			} `json:"params"`
			Result *result `json:"result"`
		}
		if err := json.Unmarshal([]byte(ev.data), &msg); err != nil {
			t.Fatalf("event %s: %v", ev.id, err)
		}
		switch {
		case res != nil:
			t.Fatalf("event %s after the result: %s", ev.id, ev.data)
		case msg.Method == "notifications/progress":
			if want := float64(len(progress) + 1); msg.Params.Progress != want {
				t.Fatalf("event %s: progress %v, want %v (lost or repeated; cut: %v)", ev.id, msg.Params.Progress, want, cut)
			}
			progress = append(progress, msg.Params.Progress)
			messages = append(messages, msg.Params.Message)
		case msg.Result != nil:
			res = msg.Result
		}
	}

	// Read up to the first progress that shows output, then cut.
	br := bufio.NewReader(resp.Body)
	for len(messages) == 0 || messages[len(messages)-1] != "y" {
		ev, err := readEvent(br)
		if err != nil {
			t.Fatalf("before the cut (%d events): %v", events, err)
		}
		take(ev)
		if res != nil {
			t.Fatal("the call ended before the cut")
		}
	}
	resp.Body.Close() // the cut
	cut = true
	cutAt, cutProgress, cutSpill := lastID, len(progress), spillBytes()
	// Let output pile up while the client is away. Nothing below depends
	// on how much did: this only makes the resumption replay more.
	for deadline := time.Now().Add(2 * time.Second); spillBytes() < cutSpill+64<<20 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	awaySpill := spillBytes()

	resumes := 0
	for res == nil {
		if resumes++; resumes > 100 {
			t.Fatalf("%d resumptions without the result", resumes-1)
		}
		resp = resume(t, url, session, lastID)
		// 409: the server has not yet seen the cut connection go; a client
		// tries again.
		for tries := 0; resp.StatusCode == http.StatusConflict && tries < 2000; tries++ {
			resp.Body.Close()
			time.Sleep(10 * time.Millisecond)
			resp = resume(t, url, session, lastID)
		}
		if resp.StatusCode != 200 {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Fatalf("resuming after %s: %s %q; %d events (%d bytes) since the cut, %d in all (%d bytes)", lastID, resp.Status, b, cutEvents, cutBytes, events, bytes)
		}
		br := bufio.NewReader(resp.Body)
		for res == nil {
			ev, err := readEvent(br)
			if errors.Is(err, io.EOF) {
				break // the stream ended without the result: resume again
			}
			if err != nil {
				t.Fatal(err)
			}
			take(ev)
		}
		if res != nil { // nothing follows the result
			if ev, err := readEvent(br); err == nil || ev != (sseEvent{}) {
				t.Errorf("after the result: %+v, %v", ev, err)
			}
		}
		resp.Body.Close()
	}
	elapsed := time.Since(start)
	t.Logf("%v; cut after %s (progress %d, %d MiB saved), resumed at %d MiB saved, %d resumption(s); %d events (%d bytes, largest %d) in all, %d (%d bytes) from the cut on; %d progress",
		elapsed.Round(time.Millisecond), cutAt, cutProgress, cutSpill>>20, awaySpill>>20, resumes, events, bytes, maxBytes, cutEvents, cutBytes, len(progress))
	if len(progress) <= cutProgress {
		t.Errorf("no progress after the cut (%d events)", len(progress))
	}

	// The result: the last lines of "y", then pi's note naming the file
	// with the whole output.
	if res.IsError || len(res.Content) != 1 {
		t.Fatalf("result: %+v", res)
	}
	text := res.Content[0].Text
	m := regexp.MustCompile(`^((?:y\n)+)\n\[Showing lines (\d+)-(\d+) of (\d+)\. Full output: (.+)\]$`).FindStringSubmatch(text)
	if m == nil {
		if len(text) > 300 {
			text = text[:100] + " … " + text[len(text)-200:]
		}
		t.Fatalf("result text %q", text)
	}
	first, _ := strconv.Atoi(m[2])
	if m[3] != strconv.Itoa(bulkLines) || m[4] != m[3] || strings.Count(m[1], "\n") != bulkLines-first+1 {
		t.Errorf("result: %d lines of y, then [Showing lines %s-%s of %s]; want the last lines of %d", strings.Count(m[1], "\n"), m[2], m[3], m[4], bulkLines)
	}
	path := m[5]
	if res.Meta.Details.FullOutputPath != path {
		t.Errorf("details.fullOutputPath %q, the text says %q", res.Meta.Details.FullOutputPath, path)
	}

	// Every byte, once: the file (a host path: the sandbox is local).
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(path) })
	h := sha256.New()
	n, err := io.Copy(h, file)
	file.Close()
	if err != nil {
		t.Fatal(err)
	}
	if n != 2*bulkLines {
		t.Errorf("%s: %d bytes, want %d", path, n, 2*bulkLines)
	}
	if !slices.Equal(h.Sum(nil), bulkHash()) {
		t.Errorf("%s: the SHA-256 differs from %d lines of y", path, bulkLines)
	}
}
