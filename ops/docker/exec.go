package docker

import (
	"context"
	"io"
	"sync"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
)

// execSpec describes one exec in the container.
type execSpec struct {
	argv   []string
	root   bool      // run as root (uid 0) instead of the sandbox user
	stdin  bool      // attach stdin (proc.stdin is then the write side)
	stdout io.Writer // stdout frames, from one goroutine; nil discards
	stderr io.Writer // stderr frames, from the same goroutine; nil discards
}

// proc is a started exec. ExecAttach is what starts it: there is no
// separate ExecStart call.
type proc struct {
	b    *Backend
	id   string
	hj   client.HijackedResponse
	done chan struct{} // closed when the output stream has ended
	err  error         // the stream copy's error, valid after done

	closeOnce sync.Once
}

// start creates and attaches an exec running spec.argv as the backend's
// user. Engine failures wrap ops.ErrTransport.
func (b *Backend) start(ctx context.Context, spec execSpec) (*proc, error) {
	user := b.user
	if spec.root {
		user = "0"
	}
	cr, err := b.cli.ExecCreate(ctx, b.id, client.ExecCreateOptions{
		User:         user,
		AttachStdin:  spec.stdin,
		AttachStdout: true,
		AttachStderr: true,
		Cmd:          spec.argv,
	})
	if err != nil {
		return nil, b.engineErr("exec create", err)
	}
	ar, err := b.cli.ExecAttach(ctx, cr.ID, client.ExecAttachOptions{})
	if err != nil {
		return nil, b.engineErr("exec attach", err)
	}
	p := &proc{b: b, id: cr.ID, hj: ar.HijackedResponse, done: make(chan struct{})}
	out, errw := spec.stdout, spec.stderr
	if out == nil {
		out = io.Discard
	}
	if errw == nil {
		errw = io.Discard
	}
	go func() {
		defer close(p.done)
		// Without a TTY the stream is multiplexed; StdCopy demuxes it.
		_, p.err = stdcopy.StdCopy(out, errw, p.hj.Reader)
	}()
	return p, nil
}

// closeStream ends the attachment; the copy goroutine then finishes.
func (p *proc) closeStream() {
	p.closeOnce.Do(func() { p.hj.Close() })
}

// closeStdin signals EOF on the exec's stdin.
func (p *proc) closeStdin() error { return p.hj.CloseWrite() }

// inspect reports whether the exec still runs and its exit code.
func (p *proc) inspect(ctx context.Context) (running bool, code int, err error) {
	r, err := p.b.cli.ExecInspect(ctx, p.id, client.ExecInspectOptions{})
	if err != nil {
		return false, 0, p.b.engineErr("exec inspect", err)
	}
	return r.Running, r.ExitCode, nil
}
