package docker

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

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

// closeAfterExit closes the stream when the exec has ended but its stream
// has not: under load an attach connection was seen to stay open after
// its process exited, which hung the call. Only for callers that drain the
// stream as it arrives (script), so that closing it loses nothing.
func (p *proc) closeAfterExit(ctx context.Context) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if running, _, err := p.inspect(ctx); err != nil || running {
			continue
		}
		select {
		case <-p.done:
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
			p.closeStream()
		}
		return
	}
}

// waitExit polls ExecInspect until the exec is no longer running (the
// stream can end before the daemon records the exit).
func (p *proc) waitExit(ctx context.Context) (int, error) {
	delay := time.Millisecond
	for {
		running, code, err := p.inspect(ctx)
		if err != nil {
			return 0, err
		}
		if !running {
			return code, nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(delay*2, 50*time.Millisecond)
	}
}

// rcPrefix marks the status line the file scripts print on stderr, which
// saves an ExecInspect round trip.
const rcPrefix = "pi-sandbox-rc "

// scriptResult is the outcome of a short script.
type scriptResult struct {
	stdout []byte
	stderr string // without the status line
	code   int
}

// script runs body with /bin/sh -c, feeding stdin when not nil, and
// collects its output. body must not call exit: its last status is
// reported on stderr.
func (b *Backend) script(ctx context.Context, body string, stdin io.Reader) (*scriptResult, error) {
	return b.scriptAs(ctx, false, body, stdin)
}

// scriptAs is script, as root when root is set.
func (b *Backend) scriptAs(ctx context.Context, root bool, body string, stdin io.Reader) (*scriptResult, error) {
	var out, errb bytes.Buffer
	p, err := b.start(ctx, execSpec{
		root:   root,
		argv:   []string{"/bin/sh", "-c", "f() {\n" + body + "\n}\nf; echo \"" + rcPrefix + "$?\" >&2"},
		stdin:  stdin != nil,
		stdout: &out,
		stderr: &errb,
	})
	if err != nil {
		return nil, err
	}
	defer p.closeStream()
	stop := context.AfterFunc(ctx, p.closeStream)
	defer stop()
	if stdin != nil {
		go func() {
			io.Copy(p.hj.Conn, stdin)
			p.closeStdin()
		}()
	}
	go p.closeAfterExit(ctx)
	<-p.done
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	res := &scriptResult{stdout: out.Bytes()}
	stderr := errb.String()
	if i := strings.LastIndex(stderr, rcPrefix); i >= 0 {
		code, err := strconv.Atoi(strings.TrimSpace(stderr[i+len(rcPrefix):]))
		if err == nil {
			res.code, res.stderr = code, stderr[:i]
			return res, nil
		}
	}
	// No status line: the shell died (or the container did).
	res.stderr = stderr
	code, err := p.waitExit(ctx)
	if err != nil {
		return nil, err
	}
	if code == 0 {
		return nil, b.goneErr(errors.New("script ended without its status line"))
	}
	res.code = code
	return res, nil
}
