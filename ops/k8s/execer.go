package k8s

import (
	"context"
	"fmt"
	"io"

	"github.com/pi-sandbox/pi-sandbox/ops"

	"github.com/pi-sandbox/pi-sandbox/ops/internal/dispatch"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/execops"
)

// The exec-per-operation fallback (ops/internal/execops) over pods/exec:
// with NoHelper, every operation is one exec.

// execer is the execops primitive over the pod's execs.
type execer struct{ t *podExec }

func (e execer) Start(ctx context.Context, s execops.Spec) (execops.Process, error) {
	if s.Root {
		return nil, errRootExec
	}
	p := &execProc{done: make(chan struct{}), code: -1}
	stdin := s.Stdin
	if s.StdinPipe {
		r, w := io.Pipe()
		stdin, p.stdin = r, w
	}
	// The stream outlives ctx: on a cancel execops kills the process with
	// a second exec, and this one then ends with the status.
	ectx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.cancel = cancel
	go func() {
		defer close(p.done)
		defer p.cancel()
		p.code, p.err = e.t.exec(ectx, s.Argv, stdin, s.Stdout, s.Stderr)
		if pr, ok := stdin.(*io.PipeReader); ok {
			pr.Close()
		}
	}()
	return p, nil
}

// execProc is one pods/exec as an execops.Process: the exit status comes
// with the end of the stream.
type execProc struct {
	stdin  *io.PipeWriter
	cancel context.CancelFunc
	done   chan struct{}
	code   int
	err    error
}

func (p *execProc) Stdin() io.WriteCloser {
	if p.stdin == nil {
		return nil
	}
	return p.stdin
}

func (p *execProc) Done() <-chan struct{} { return p.done }
func (p *execProc) Err() error            { return p.err }
func (p *execProc) Close()                { p.cancel() }

func (p *execProc) Wait(ctx context.Context) (int, error) {
	select {
	case <-p.done:
		return p.code, p.err
	case <-ctx.Done():
		return 0, context.Cause(ctx)
	}
}

// dispatcher is embedded in Backend (an alias keeps the field unexported).
type dispatcher = dispatch.Dispatcher

// initOps sets up the fallback's operations and the dispatch to the helper.
func (b *Backend) initOps() {
	b.x = execops.New(execops.Config{Exec: execer{b.t}, Name: "k8s"})
	b.dispatcher = dispatch.Dispatcher{
		Helper: func() dispatch.Helper {
			if b.h == nil {
				return nil
			}
			return b.h
		},
		Fallback: b.x,
		Owner:    b,
	}
}

// errRootExec: pods/exec runs as the container's user.
var errRootExec = fmt.Errorf("k8s: pods/exec cannot run as root: %w", ops.ErrUnsupported)
