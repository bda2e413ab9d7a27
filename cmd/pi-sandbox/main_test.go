package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/loop/looptest"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/sandbox/open"
	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"pi-sandbox": func() { os.Exit(testEntry()) },
	})
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode": cmdExitCode,
			"cmpnorm":  cmdCmpNorm,
			"fakellm":  cmdFakeLLM,
		},
	})
}

// cmdExitCode is "exitcode N prog args...": run prog, want exit status N.
func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exitcode N prog [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: %v", err)
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exitcode: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("exit status %d, want %d", got, want)
	}
}

// cmdFakeLLM is "fakellm REPLY...": a fake model API on 127.0.0.1 for the
// rest of the script. Request N (any path) is answered from file REPLY N: a
// first line "status CODE" makes it that status with the rest as a JSON
// body, else the file is an SSE stream (text/event-stream). Each request's
// body is saved as requestN.json in $WORK; $LLM_URL is the server's URL.
func cmdFakeLLM(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: fakellm REPLY...")
	}
	var replies []string
	for _, a := range args {
		replies = append(replies, ts.ReadFile(a))
	}
	work := ts.Getenv("WORK")
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		n++
		i := n
		mu.Unlock()
		os.WriteFile(filepath.Join(work, fmt.Sprintf("request%d.json", i)), body, 0o644)
		if i > len(replies) {
			http.Error(w, `{"error":{"message":"fakellm: no reply left","type":"server_error"}}`, http.StatusInternalServerError)
			return
		}
		reply := replies[i-1]
		if first, rest, ok := strings.Cut(reply, "\n"); ok && strings.HasPrefix(first, "status ") {
			code, _ := strconv.Atoi(strings.TrimPrefix(first, "status "))
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			io.WriteString(w, rest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, reply)
	}))
	ts.Defer(srv.Close)
	ts.Setenv("LLM_URL", srv.URL)
}

var durationMs = regexp.MustCompile(`"durationMs":\d+`)

// cmdCmpNorm is "cmpnorm stdout golden": cmp after writing every
// "durationMs":<n> as "durationMs":N.
func cmdCmpNorm(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: cmpnorm file golden")
	}
	got := durationMs.ReplaceAllString(ts.ReadFile(args[0]), `"durationMs":N`)
	want := ts.ReadFile(args[1])
	if got != want {
		ts.Fatalf("%s differs from %s:\n%s", args[0], args[1], diffLines(got, want))
	}
}

func diffLines(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var b strings.Builder
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			fmt.Fprintf(&b, "line %d:\n  got  %s\n  want %s\n", i+1, gl, wl)
		}
	}
	return b.String()
}

// testEntry is the pi-sandbox command inside scripts. With
// PI_SANDBOX_TEST_TOOLS=1 the commands run on looptest's tools instead of a
// backend (the hook lives only in this test binary); =open-error makes
// opening the backend fail.
func testEntry() int {
	out := io.Writer(os.Stdout)
	switch os.Getenv("PI_SANDBOX_TEST_TOOLS") {
	case "1":
		gates := &looptest.Gates{}
		gw := &gateWriter{w: os.Stdout, gates: gates}
		out = gw
		openSession = func(ctx context.Context, cfg open.Config) (*session, error) {
			return &session{tools: testTools(gates), close: func() error { return nil }}, nil
		}
	case "open-error":
		openSession = func(ctx context.Context, cfg open.Config) (*session, error) {
			return nil, fmt.Errorf("docker: connect: %w", ops.ErrTransport)
		}
	}
	return runMain(context.Background(), os.Args[1:], stdio{os.Stdin, out, os.Stderr})
}

func testTools(g *looptest.Gates) []loop.Tool {
	transport := looptest.Fail(fmt.Errorf("ssh: connection lost: %w", ops.ErrTransport))
	transport.ToolName = "transport"
	return []loop.Tool{
		looptest.Echo(), looptest.Seq(), looptest.Fail(nil), transport, looptest.Updates(),
		looptest.Gate(g, nil),
		&looptest.Func{ToolName: "read",
			Schema: `{"type":"object","properties":{"path":{"type":"string"},"offset":{"type":"number"},"limit":{"type":"number"}},"required":["path"]}`,
			Fn: func(_ context.Context, _ string, args map[string]any, _ loop.UpdateFunc) (*loop.Result, error) {
				b, _ := loop.MarshalNoEscape(args)
				return loop.TextResult(string(b), nil), nil
			}},
	}
}

// gateWriter opens gate <id> once the tool_execution_end line of call <id>
// has been written, so a script can order completions without sleeping:
// {"name":"gate","arguments":{"wait":"t3"}} finishes after t3's end event.
type gateWriter struct {
	mu    sync.Mutex
	w     io.Writer
	gates *looptest.Gates
	buf   []byte
}

var endLine = regexp.MustCompile(`^\{"type":"tool_execution_end","toolCallId":"([^"]*)"`)

func (g *gateWriter) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n, err := g.w.Write(p)
	g.buf = append(g.buf, p[:n]...)
	for {
		i := bytes.IndexByte(g.buf, '\n')
		if i < 0 {
			break
		}
		if m := endLine.FindSubmatch(g.buf[:i]); m != nil {
			g.gates.Open(string(m[1]))
		}
		g.buf = g.buf[i+1:]
	}
	return n, err
}

func TestTransportFailureDetected(t *testing.T) {
	r := loop.ErrorResult(fmt.Errorf("x: %w", ops.ErrTransport))
	if !transportFailure(r) || transportFailure(loop.ErrorResult(errors.New("ENOENT"))) {
		t.Error("transportFailure misclassifies")
	}
}
