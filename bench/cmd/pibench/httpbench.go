package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpStats is the serve --http section: a new MCP session (initialize
// → first bash true) with and without a pool against `docker run`, a
// per-call latency against stdio serve, and 64 concurrent sessions.
type httpStats struct {
	Rows       []netRow `json:"rows,omitempty"`
	Sessions   int      `json:"concurrentSessions,omitempty"`
	Calls      int      `json:"calls,omitempty"`
	CallsPerS  float64  `json:"callsPerSecond,omitempty"`
	CallP95    float64  `json:"callP95Ms,omitempty"`
	ServerRSS  float64  `json:"serverPeakRSSMiB,omitempty"`
	ConcErr    string   `json:"concurrentError,omitempty"`
	Err        string   `json:"error,omitempty"`
	Image      string   `json:"image"`
	SessionsN  int      `json:"sessionSamples"`
	CallSample int      `json:"callSamples"`
}

const (
	httpPoolTarget = 0.05 // new session with --pool ÷ docker run --rm IMG true
	httpColdTarget = 1.3  // new session with --image ÷ docker run
	httpCallTarget = 1.5  // read 1 KiB over HTTP ÷ over stdio serve
	httpConcurrent = 64
)

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// httpServer is a started `pi-sandbox serve --http`.
type httpServer struct {
	cmd *exec.Cmd
	url string
}

func startHTTP(ctx context.Context, o *options, tokenFile string, args ...string) (*httpServer, error) {
	cmd := exec.CommandContext(ctx, o.bin, append([]string{"serve", "--http", "127.0.0.1:0", "--token-file", tokenFile}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	errb := &tailBuffer{max: 4 << 10}
	cmd.Stderr = errb
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("serve --http printed no URL: %v: %s", err, errb)
	}
	return &httpServer{cmd: cmd, url: strings.TrimSpace(line)}, nil
}

// stop ends the server as a user would (SIGTERM: every session ended).
func (s *httpServer) stop() {
	s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
}

func (s *httpServer) connect(ctx context.Context) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "pibench", Version: "1"}, nil)
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: &http.Client{Transport: bearer{"pibench"}}, DisableStandaloneSSE: true}, nil)
}

func mcpCall(ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("%s: error result", name)
	}
	return nil
}

// httpBench runs the serve --http section (docker, and local for the
// concurrent sessions).
func httpBench(ctx context.Context, o *options, p *progress) *httpStats {
	hs := &httpStats{Image: o.poolImage, SessionsN: 10, CallSample: 100}
	if o.quick {
		hs.SessionsN, hs.CallSample = 5, 50
	}
	tmp, err := os.MkdirTemp("", "pibench-http-")
	if err != nil {
		hs.Err = err.Error()
		return hs
	}
	defer os.RemoveAll(tmp)
	tokens := filepath.Join(tmp, "tokens")
	os.WriteFile(tokens, []byte("pibench\n"), 0o600)
	base := "docker run --rm --network none " + o.poolImage + " true"
	dockerRun := func() (time.Duration, error) {
		t0 := time.Now()
		_, err := runExt(ctx, nil, "docker", "run", "--rm", "--network", "none", o.poolImage, "true")
		return time.Since(t0), err
	}
	// newSession times initialize → first bash true; the session is
	// ended (DELETE) after the clock.
	newSession := func(s *httpServer) (time.Duration, error) {
		t0 := time.Now()
		cs, err := s.connect(ctx)
		if err != nil {
			return 0, err
		}
		err = mcpCall(ctx, cs, "bash", map[string]any{"command": "true"})
		d := time.Since(t0)
		cs.Close()
		return d, err
	}
	sessionRow := func(name, op string, limit float64, s *httpServer, before func() error) netRow {
		row := netRow{Name: "serve --http: " + name, Op: op, Unit: "ms", Baseline: base, Target: fmt.Sprintf("p50 ≤ %g× baseline p50", limit)}
		var ours, theirs []time.Duration
		for i := 0; i < hs.SessionsN && ctx.Err() == nil; i++ {
			p.step("serve --http: %s, sample %d of %d", name, i+1, hs.SessionsN)
			if before != nil {
				if err := before(); err != nil {
					row.Errs, row.Err = row.Errs+1, err.Error()
					continue
				}
			}
			d, err := newSession(s)
			if err != nil {
				row.Errs, row.Err = row.Errs+1, err.Error()
				continue
			}
			ours = append(ours, d)
			if d, err = dockerRun(); err == nil {
				theirs = append(theirs, d)
			}
		}
		fillRow(&row, ours, theirs, limit)
		return row
	}

	// With a pool: members filled before each sample (not timed).
	pool := fmt.Sprintf("pibench-http-%d", os.Getpid())
	defer exec.Command(o.bin, "pool", "drain", pool).Run()
	if out, err := exec.CommandContext(ctx, o.bin, "pool", "fill", pool, "--size", "2", "--image", o.poolImage).CombinedOutput(); err != nil {
		hs.Err = fmt.Sprintf("pool fill: %v: %s", err, out)
		return hs
	}
	if s, err := startHTTP(ctx, o, tokens, "--pool", pool); err != nil {
		hs.Rows = append(hs.Rows, netRow{Name: "serve --http: new session --pool", Err: err.Error(), Status: statusN(false, false)})
	} else {
		hs.Rows = append(hs.Rows, sessionRow("new session --pool", "initialize → first bash true, --pool (docker)", httpPoolTarget, s, func() error {
			_, err := exec.CommandContext(ctx, o.bin, "pool", "fill", pool, "--size", "2", "--image", o.poolImage).CombinedOutput()
			return err
		}))
		s.stop()
	}
	// Without: a container per session.
	s, err := startHTTP(ctx, o, tokens, "--image", o.poolImage)
	if err != nil {
		hs.Err = err.Error()
		return hs
	}
	hs.Rows = append(hs.Rows, sessionRow("new session --image", "initialize → first bash true, --image (docker)", httpColdTarget, s, nil))

	// Per call: read 1 KiB over HTTP against stdio serve, same image.
	callRow := netRow{Name: "serve --http: read 1 KiB", Op: "read 1 KiB over HTTP (docker --image)", Unit: "ms", Baseline: "read 1 KiB over stdio serve (docker --image)", Target: fmt.Sprintf("p50 ≤ %g× baseline p50", httpCallTarget)}
	if hc, err := s.connect(ctx); err != nil {
		callRow.Err, callRow.Errs = err.Error(), 1
	} else {
		client := mcp.NewClient(&mcp.Implementation{Name: "pibench", Version: "1"}, nil)
		sc, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(o.bin, "serve", "--image", o.poolImage)}, nil)
		if err != nil {
			callRow.Err, callRow.Errs = err.Error(), 1
		} else {
			write := map[string]any{"path": "kib.txt", "content": strings.Repeat("x", 1023) + "\n"}
			mcpCall(ctx, hc, "write", write)
			mcpCall(ctx, sc, "write", write)
			read := map[string]any{"path": "kib.txt"}
			var ours, theirs []time.Duration
			p.step("serve --http: read 1 KiB ×%d, alternating with stdio", hs.CallSample)
			for i := 0; i < hs.CallSample && ctx.Err() == nil; i++ {
				t0 := time.Now()
				if err := mcpCall(ctx, hc, "read", read); err == nil {
					ours = append(ours, time.Since(t0))
				} else {
					callRow.Errs, callRow.Err = callRow.Errs+1, err.Error()
				}
				t0 = time.Now()
				if err := mcpCall(ctx, sc, "read", read); err == nil {
					theirs = append(theirs, time.Since(t0))
				}
			}
			fillRow(&callRow, ours, theirs, httpCallTarget)
			sc.Close()
		}
		hc.Close()
	}
	hs.Rows = append(hs.Rows, callRow)
	s.stop()

	// 64 concurrent sessions on local, 10 bash true each.
	p.step("serve --http: %d concurrent sessions on local", httpConcurrent)
	ls, err := startHTTP(ctx, o, tokens, "--backend", "local", "--workdir", tmp, "--max-sessions", strconv.Itoa(httpConcurrent))
	if err != nil {
		hs.ConcErr = err.Error()
		return hs
	}
	defer ls.stop()
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	t0 := time.Now()
	for range httpConcurrent {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs, err := ls.connect(ctx)
			if err != nil {
				mu.Lock()
				hs.ConcErr = err.Error()
				mu.Unlock()
				return
			}
			defer cs.Close()
			for range 10 {
				c0 := time.Now()
				err := mcpCall(ctx, cs, "bash", map[string]any{"command": "true"})
				mu.Lock()
				if err != nil {
					hs.ConcErr = err.Error()
				} else {
					lat = append(lat, time.Since(c0))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	el := time.Since(t0)
	hs.Sessions, hs.Calls = httpConcurrent, len(lat)
	hs.CallsPerS = float64(len(lat)) / el.Seconds()
	hs.CallP95 = quantile(lat, 0.95)
	hs.ServerRSS = float64(pidHWM(ls.cmd.Process.Pid)) / 1024
	return hs
}

// pidHWM is a live process's peak RSS (VmHWM) in KiB; 0 when unknown.
func pidHWM(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
