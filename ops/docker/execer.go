package docker

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/ops/internal/execops"
	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

// The exec-per-operation fallback (ops/internal/execops) over the Engine
// API's exec: ExecCreate, ExecAttach (which starts it), stdcopy, and
// ExecInspect for the exit code.

// inspectEvery is how often ExecInspect is polled while an exec's stream
// is still open (a wrapper that died without its exit line).
const inspectEvery = 250 * time.Millisecond

// execer is the execops primitive over the backend's execs.
type execer struct{ b *Backend }

func (e execer) Start(ctx context.Context, s execops.Spec) (execops.Process, error) {
	p, err := e.b.start(ctx, execSpec{argv: s.Argv, root: s.Root, stdin: s.Stdin != nil || s.StdinPipe, stdout: s.Stdout, stderr: s.Stderr})
	if err != nil {
		return nil, err
	}
	if s.Stdin != nil {
		go func() {
			io.Copy(p.hj.Conn, s.Stdin)
			p.closeStdin()
		}()
	}
	return &execProc{p: p, pipe: s.StdinPipe}, nil
}

// execProc is a started exec as an execops.Process.
type execProc struct {
	p    *proc
	pipe bool
}

func (e *execProc) Stdin() io.WriteCloser {
	if !e.pipe {
		return nil
	}
	return execStdin{e.p}
}

func (e *execProc) Done() <-chan struct{} { return e.p.done }
func (e *execProc) Err() error            { return e.p.err }
func (e *execProc) Close()                { e.p.closeStream() }

// Wait polls ExecInspect until the exec is no longer running: every
// inspectEvery while the stream is open (what a wrapper that died without
// its exit line needs, at the engine load of one call per command and
// tick), quickly once it has ended (the stream can end before the daemon
// records the exit).
func (e *execProc) Wait(ctx context.Context) (int, error) {
	delay := time.Millisecond
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-e.p.done:
		default:
			// Streaming: the first look after one tick, then every tick.
			t.Reset(inspectEvery)
			select {
			case <-ctx.Done():
				return 0, context.Cause(ctx)
			case <-e.p.done:
			case <-t.C:
			}
		}
		running, code, err := e.p.inspect(ctx)
		if err != nil {
			return 0, err
		}
		if !running {
			return code, nil
		}
		select {
		case <-e.p.done:
			delay = min(delay*2, 50*time.Millisecond)
			select {
			case <-ctx.Done():
				return 0, context.Cause(ctx)
			case <-time.After(delay):
			}
		default:
		}
	}
}

// execStdin writes to the exec's stdin; Close is a half-close.
type execStdin struct{ p *proc }

func (s execStdin) Write(b []byte) (int, error) { return s.p.hj.Conn.Write(b) }
func (s execStdin) Close() error                { return s.p.closeStdin() }

// newExecOps returns the fallback's operations over b's execs.
func newExecOps(b *Backend) *execops.Ops {
	return execops.New(execops.Config{
		Exec:      execer{b},
		Name:      "docker",
		Lost:      b.goneErr,
		Stopped:   b.containerStops,
		RetryKill: b.retryKill,
	})
}

// scriptResult is the outcome of a short script.
type scriptResult struct {
	stdout []byte
	stderr string
	code   int
}

// failure describes a script that failed: its exit code and what it said
// on stderr, else on stdout (an exec the engine could not start, in a
// container that is stopping, has the engine's message there and exit
// code 126).
func (r *scriptResult) failure() string {
	s := strings.TrimSpace(r.stderr)
	if s == "" {
		s = strings.TrimSpace(string(r.stdout))
	}
	if s == "" {
		s = "no output"
	}
	return fmt.Sprintf("exit %d: %s", r.code, proto.ClipText(s))
}

// script runs body with /bin/sh -c in the container (execops.Ops.Script).
func (b *Backend) script(ctx context.Context, body string, stdin io.Reader) (*scriptResult, error) {
	return b.scriptAs(ctx, false, body, stdin)
}

// scriptAs is script, as root when root is set.
func (b *Backend) scriptAs(ctx context.Context, root bool, body string, stdin io.Reader) (*scriptResult, error) {
	r, err := b.x.ScriptAs(ctx, root, body, stdin)
	if err != nil {
		return nil, err
	}
	return &scriptResult{stdout: r.Stdout, stderr: r.Stderr, code: r.Code}, nil
}

// containerStops reports whether the container stops running within a
// short while: the engine records a killed container's exit a little after
// the exec streams break.
func (b *Backend) containerStops() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, 200*time.Millisecond) {
		if !b.containerRunning(ctx) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(delay):
		}
		if delay >= 200*time.Millisecond {
			return false
		}
	}
}

// killRetryFor bounds how long a kill waits for a paused container.
const killRetryFor = 10 * time.Minute

// retryKill retries a kill once the container is running and not paused;
// it gives up when the container is gone or stopped (its processes are dead
// then) or after killRetryFor. The pause between tries doubles from 250 ms
// to 10 s: a kill that failed because the engine was slow must not add an
// inspect and an exec every 250 ms to what slows it (each killed call of a
// loaded engine left such a loop, and together they stalled it).
func (b *Backend) retryKill(try func() bool) {
	delay := 250 * time.Millisecond
	for deadline := time.Now().Add(killRetryFor); time.Now().Before(deadline); delay = min(2*delay, 10*time.Second) {
		time.Sleep(delay)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		res, err := b.cli.ContainerInspect(ctx, b.id, client.ContainerInspectOptions{})
		cancel()
		if err != nil || res.Container.State == nil || !res.Container.State.Running {
			return
		}
		if res.Container.State.Paused {
			continue
		}
		if try() {
			return
		}
	}
}
