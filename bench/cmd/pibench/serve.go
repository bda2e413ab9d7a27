package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveStats is one `pi-sandbox serve` (MCP over stdio) session, as an agent
// sees the sandbox: p50 per op beside the same-run baseline, 16 parallel
// `sleep 0.5` calls, and (docker) a call after `docker restart`.
type serveStats struct {
	Ops        []serveOp `json:"ops"`
	Parallel   int       `json:"parallelCalls"`
	ParallelMs float64   `json:"parallelMs"`
	ParallelEr string    `json:"parallelError,omitempty"`
	Restart    string    `json:"afterRestart,omitempty"` // "ok (N ms)" or the error
	Err        string    `json:"error,omitempty"`
}

type serveOp struct {
	Key      string  `json:"key"`
	Op       string  `json:"op"`
	Stats    stats   `json:"stats"`
	Baseline string  `json:"baseline,omitempty"`
	Base     stats   `json:"baselineStats"`
	Ratio    float64 `json:"overBaseline,omitempty"`
}

// mcpSession is a started `pi-sandbox serve`.
type mcpSession struct {
	cs  *mcp.ClientSession
	cmd *exec.Cmd
}

func startServe(ctx context.Context, o *options, e *env) (*mcpSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "pibench", Version: "1"}, nil)
	cmd := exec.Command(o.bin, append([]string{"serve"}, e.cli...)...)
	cmd.Stderr = &tailBuffer{max: 4 << 10}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cs, err := client.Connect(cctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return nil, fmt.Errorf("pi-sandbox serve: %v: %s", err, cmd.Stderr)
	}
	return &mcpSession{cs: cs, cmd: cmd}, nil
}

func (m *mcpSession) close() { m.cs.Close() }

// call runs one tool; an error result is an error.
func (m *mcpSession) call(ctx context.Context, name string, args map[string]any) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	res, err := m.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return err
	}
	if res.IsError {
		var sb strings.Builder
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				sb.WriteString(t.Text)
			}
		}
		return fmt.Errorf("%s: error result: %.300s", name, sb.String())
	}
	return nil
}

// serveBench runs the session measurements on e (docker: read 1 KiB and
// bash true; ssh: bash true), given the baselines already measured in this
// run by op key.
func serveBench(ctx context.Context, o *options, p *progress, e *env, base map[string]stats, baseName map[string]string) *serveStats {
	res := &serveStats{}
	p.step("%s: pi-sandbox serve session", e.name)
	m, err := startServe(ctx, o, e)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	defer m.close()
	type op struct {
		key, name, tool string
		args            map[string]any
	}
	ops := []op{{"true", "bash true", "bash", map[string]any{"command": "true"}}}
	if e.name == "docker" {
		ops = append([]op{{"read1k", "read 1 KiB", "read", map[string]any{"path": "lat/r1k.txt"}}}, ops...)
	}
	for _, x := range ops {
		p.step("%s: serve %s ×%d", e.name, x.name, o.n)
		st := timeN(p, "serve "+x.name, o.n, func(int) error { return m.call(ctx, x.tool, x.args) })
		r := serveOp{Key: x.key, Op: x.name, Stats: st, Baseline: baseName[x.key], Base: base[x.key]}
		r.Ratio = ratio(st.P50Ms, r.Base.P50Ms)
		res.Ops = append(res.Ops, r)
	}
	res.Parallel = 16
	p.step("%s: serve %d parallel sleep 0.5", e.name, res.Parallel)
	var alls []time.Duration
	for range 3 {
		var wg sync.WaitGroup
		errs := make(chan error, res.Parallel)
		t := time.Now()
		for range res.Parallel {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := m.call(ctx, "bash", map[string]any{"command": "sleep 0.5"}); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		alls = append(alls, time.Since(t))
		close(errs)
		if err := <-errs; err != nil {
			res.ParallelEr = err.Error()
			break
		}
	}
	res.ParallelMs = summarize(alls).P50Ms
	if e.name == "docker" && e.container != "" {
		p.step("docker: serve: docker restart, then a call")
		if _, err := runExt(ctx, nil, "docker", "restart", "-t", "1", e.container); err != nil {
			res.Restart = "docker restart: " + err.Error()
			return res
		}
		t := time.Now()
		if err := m.call(ctx, "bash", map[string]any{"command": "echo ok"}); err != nil {
			res.Restart = "failed: " + err.Error()
		} else {
			res.Restart = fmt.Sprintf("ok (%.0f ms)", timedSince(t))
		}
	}
	return res
}

// tailBuffer keeps the last max bytes written (a child's stderr).
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}
