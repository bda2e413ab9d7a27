package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestCheckFrame(t *testing.T) {
	for _, c := range []struct {
		line string
		code int64  // 0: well-formed
		id   string // the id the error answers ("" for null)
	}{
		{`garbage`, codeParseError, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"`, codeParseError, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"} {}`, codeParseError, ""},
		{`[]`, codeInvalidRequest, ""},
		{`null`, codeInvalidRequest, ""},
		{`5`, codeInvalidRequest, ""},
		{`"ping"`, codeInvalidRequest, ""},
		{`{"jsonrpc":"2.0","id":1}`, codeInvalidRequest, "1"},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, codeInvalidRequest, ""},
		{`{"jsonrpc":"2.0","id":[1],"method":"ping"}`, codeInvalidRequest, ""},
		{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, codeInvalidRequest, ""},
		{`{"id":"a","method":"ping"}`, codeInvalidRequest, `"a"`},
		{`{"jsonrpc":"1.0","id":2,"method":"ping"}`, codeInvalidRequest, "2"},
		{`{"jsonrpc":"2.0","id":2,"method":5}`, codeInvalidRequest, "2"},
		{`{"jsonrpc":"2.0","result":{}}`, codeInvalidRequest, ""},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"},5]`, codeInvalidRequest, ""},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":1,"method":"ping"}]`, codeInvalidRequest, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, 0, ""},
		{`{"jsonrpc":"2.0","id":"x","method":"tools/list","params":{}}`, 0, ""},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, 0, ""},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, 0, ""},
		{`{"jsonrpc":"2.0","id":7,"result":{}}`, 0, ""},
		{`{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"x"}}`, 0, ""},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"x"}]`, 0, ""},
	} {
		got := checkFrame([]byte(c.line))
		switch {
		case c.code == 0 && got != nil:
			t.Errorf("%s: refused: %+v", c.line, got)
		case c.code != 0 && got == nil:
			t.Errorf("%s: accepted", c.line)
		case c.code != 0 && (got.Code != c.code || string(got.ID) != c.id):
			t.Errorf("%s: code %d id %s (%s), want %d id %q", c.line, got.Code, got.ID, got.Error, c.code, c.id)
		}
	}
}

// rpcLine is a message serve wrote.
type rpcLine struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Method string `json:"method"`
}

// TestServeSurvivesBrokenLines is issue 17's: garbage, [], null, a request
// without a method, an object id, and a frame over 16 MiB each get a
// JSON-RPC error, and serve goes on — a call in flight meanwhile completes,
// and later requests are answered.
func TestServeSurvivesBrokenLines(t *testing.T) {
	serveEnv(t)
	dir := t.TempDir()
	cmd := exec.Command("pi-sandbox", "serve", "--workdir", dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan rpcLine, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var l rpcLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Errorf("serve wrote %q: %v", sc.Text(), err)
			}
			if l.Method == "" { // notifications (progress, logs) are not answers
				lines <- l
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(stdin, s+"\n"); err != nil {
			t.Fatalf("write: %v (stderr %s)", err, stderr)
		}
	}
	next := func(what string) rpcLine {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("%s: serve closed stdout (stderr %s)", what, stderr)
			}
			return l
		case <-ctx.Done():
			t.Fatalf("%s: no answer", what)
		}
		return rpcLine{}
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if l := next("initialize"); string(l.ID) != "0" || l.Result == nil {
		t.Fatalf("initialize: %+v", l)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	// A call that runs until the test lets it end.
	send(`{"jsonrpc":"2.0","id":"inflight","method":"tools/call","params":{"name":"bash","arguments":{"command":"until [ -e go ]; do sleep 0.05; done; echo finished"}}}`)

	big := `{"jsonrpc":"2.0","id":99,"method":"ping","params":{"pad":"` + strings.Repeat("x", 16<<20) + `"}}`
	for _, c := range []struct {
		line string
		code int64
		id   string
	}{
		{"garbage", -32700, "null"},
		{"[]", -32600, "null"},
		{"null", -32600, "null"},
		{`{"jsonrpc":"2.0","id":5}`, -32600, "5"},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, -32600, "null"},
		{big, -32600, "null"},
		{`[{"jsonrpc":"2.0","id":6,"method":"ping"},{"jsonrpc":"2.0","id":6,"method":"ping"}]`, -32600, "null"},
	} {
		what := c.line[:min(len(c.line), 40)]
		send(c.line)
		l := next(what)
		if l.Error == nil || l.Error.Code != c.code || string(l.ID) != c.id {
			t.Errorf("%s: answer %+v (error %+v), want code %d id %s", what, l, l.Error, c.code, c.id)
		}
	}
	send(`{"jsonrpc":"2.0","id":10,"method":"ping"}`)
	if l := next("ping"); string(l.ID) != "10" || l.Error != nil {
		t.Errorf("ping after the broken lines: %+v", l)
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	l := next("the call in flight")
	if string(l.ID) != `"inflight"` || !strings.Contains(string(l.Result), `finished\n`) {
		t.Errorf("call in flight: id %s result %s error %+v", l.ID, l.Result, l.Error)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("serve: %v (stderr %s)", err, stderr)
	}
	if s := stderr.String(); s != "" {
		t.Logf("stderr: %s", s)
	}
}

// TestServeProgressRedacted: MCP progress messages carry bash's output as
// it streams; a secret printed in two pieces a moment apart never shows in
// one, not even its first piece, while output before it does.
func TestServeProgressRedacted(t *testing.T) {
	serveEnv(t)
	dir := t.TempDir()
	gc := &goSDKClient{progress: map[string][]string{}}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			gc.mu.Lock()
			defer gc.mu.Unlock()
			tok := fmt.Sprint(req.Params.ProgressToken)
			gc.progress[tok] = append(gc.progress[tok], req.Params.Message)
		},
	})
	cmd := exec.Command("pi-sandbox", serveArgs(dir)...)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	gc.cs = cs
	// PI_SERVE_TEST_SECRET is very-secret-value.
	o, err := gc.call(ctx, "bash", map[string]any{"command": `s=$PI_SERVE_TEST_SECRET; echo first; sleep 0.4; printf %s "${s%-value}"; sleep 0.4; echo -value`}, true)
	if err != nil {
		t.Fatalf("%v (stderr %s)", err, stderr)
	}
	if o.isError || o.text() != "first\n[REDACTED]\n" {
		t.Errorf("bash: %+v", o)
	}
	if !slices.Contains(o.progress, "first") {
		t.Errorf("progress %q: want first among them", o.progress)
	}
	for _, p := range o.progress {
		if strings.Contains(p, "very-sec") {
			t.Errorf("progress message %q shows part of the secret", p)
		}
	}
}
