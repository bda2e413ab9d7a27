package execops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/opstest"
)

// hostExec is the primitive over os/exec on the host, as the package doc
// specifies it: each process a session leader (as runc exec starts them),
// Close tears down the pipes and kills nothing. It is also a reference for
// an implementer.
type hostExec struct {
	cred *syscall.Credential // run as this user (nil: ours)
	// cut, when positive, ends a Spec.Stdin after that many bytes, as an
	// attach stream cut by a dying client looks to cat.
	cut int64
	// drop, when set, cuts the output streams of processes part way, as a
	// transport that dropped the connection looks: no status comes.
	drop *dropper
}

// dropper cuts the stdout of the next times processes after after bytes,
// then calls hook.
type dropper struct {
	after int64
	times atomic.Int32
	hook  func()
	cuts  atomic.Int32
}

func (d *dropper) take() bool {
	if d == nil || d.times.Add(-1) < 0 {
		return false
	}
	d.cuts.Add(1)
	return true
}

type hostProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	outs   []*os.File // our read ends
	done   chan struct{}
	errs   [2]error // per stream, read after done
	exited chan struct{}
	code   int
	werr   error
	once   sync.Once
	cut    atomic.Bool // the output streams were cut (see dropper)
}

// gatedWriter passes writes on to w, except, once shut, the script's
// status line and all after it. One goroutine writes (the stream's copy).
type gatedWriter struct {
	w       io.Writer
	shut    *atomic.Bool
	dropped bool
}

func (g *gatedWriter) Write(b []byte) (int, error) {
	n := len(b)
	if g.dropped {
		return n, nil
	}
	if i := bytes.Index(b, []byte(rcPrefix)); i >= 0 && g.shut.Load() {
		g.dropped, b = true, b[:i]
	}
	if _, err := g.w.Write(b); err != nil {
		return 0, err
	}
	return n, nil
}

func (h hostExec) Start(ctx context.Context, s Spec) (Process, error) {
	if s.Root {
		return nil, fmt.Errorf("hostexec: root: %w", ops.ErrUnsupported)
	}
	cmd := exec.Command(s.Argv[0], s.Argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: h.cred}
	p := &hostProc{cmd: cmd, done: make(chan struct{}), exited: make(chan struct{})}
	var closeAfter []*os.File
	switch {
	case s.Stdin != nil && h.cut > 0:
		cmd.Stdin = io.LimitReader(s.Stdin, h.cut)
	case s.Stdin != nil:
		cmd.Stdin = s.Stdin
	case s.StdinPipe:
		w, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		p.stdin = w
	}
	var copies sync.WaitGroup
	cutOut := s.Stdout != nil && h.drop.take()
	for i, dst := range []io.Writer{s.Stdout, s.Stderr} {
		r, wf, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		closeAfter = append(closeAfter, wf)
		p.outs = append(p.outs, r)
		if dst == nil {
			dst = io.Discard
		}
		if i == 1 && cutOut {
			// The script's status (it comes once cat dies of the closed
			// pipe) does not arrive, as over a dropped connection: the
			// gate shuts before the pipes close.
			dst = &gatedWriter{w: dst, shut: &p.cut}
		}
		copies.Add(1)
		go func() {
			defer copies.Done()
			if i == 0 && cutOut {
				io.CopyN(dst, r, h.drop.after)
				p.errs[0] = errors.New("hostexec: stream cut")
				p.cut.Store(true)
				r.Close() // stderr drains: what came before the cut arrives
				if h.drop.hook != nil {
					h.drop.hook()
				}
				return
			}
			if _, err := io.Copy(dst, r); err != nil && !errors.Is(err, os.ErrClosed) {
				p.errs[i] = err
			}
		}()
	}
	cmd.Stdout, cmd.Stderr = closeAfter[0], closeAfter[1]
	if err := cmd.Start(); err != nil {
		for _, f := range append(closeAfter, p.outs...) {
			f.Close()
		}
		return nil, fmt.Errorf("hostexec: %w: %w", ops.ErrTransport, err)
	}
	for _, f := range closeAfter {
		f.Close()
	}
	go func() {
		err := cmd.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			p.code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				p.code = 128 + int(ws.Signal())
			}
		default:
			p.werr = fmt.Errorf("hostexec: %w: %w", ops.ErrTransport, err)
		}
		close(p.exited)
	}()
	go func() {
		copies.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *hostProc) Stdin() io.WriteCloser { return p.stdin }
func (p *hostProc) Done() <-chan struct{} { return p.done }
func (p *hostProc) Err() error            { return errors.Join(p.errs[:]...) }

func (p *hostProc) Wait(ctx context.Context) (int, error) {
	select {
	case <-p.exited:
		return p.code, p.werr
	case <-ctx.Done():
		return 0, context.Cause(ctx)
	}
}

func (p *hostProc) Close() {
	p.once.Do(func() {
		for _, f := range p.outs {
			f.Close()
		}
		if p.stdin != nil {
			p.stdin.Close()
		}
	})
}

// hostBackend is an ops.Backend over Ops on the host.
type hostBackend struct {
	*Ops
	info ops.Info
}

func (b *hostBackend) Info() ops.Info { return b.info }
func (b *hostBackend) Close() error   { return nil }

func newHostBackend(t *testing.T) ops.Backend {
	if runtime.GOOS != "linux" {
		testenv.SkipOrFail(t, "execops on the host: needs Linux")
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	work, run := t.TempDir(), t.TempDir()
	o := New(Config{Exec: hostExec{}, Name: "hostexec"})
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME=" + u.HomeDir, "LANG=C.UTF-8"}
	o.SetTarget(Target{WorkDir: work, Shell: "/bin/sh", Env: env, RunDir: run})
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &hostBackend{Ops: o, info: ops.Info{
		Backend: "hostexec", WorkDir: work, Home: u.HomeDir, User: u.Username, UID: uid, GID: gid,
		OS: runtime.GOOS, Arch: runtime.GOARCH, Shell: "/bin/sh", SpillDir: t.TempDir(),
		Capabilities: []string{"grep", "find", "linecount"},
	}}
}

// TestConformanceHostExec runs the whole ops suite over the scripts with
// the host as the target: what a transport adds (docker, pods/exec) is
// then only the primitive.
func TestConformanceHostExec(t *testing.T) {
	opstest.TestBackendWithGaps(t, newHostBackend, opstest.Gaps{Skip: map[string]string{
		// search.FindWithFD: an fd before 8.7 has no --no-require-git, so
		// outside a git repository it ignores .gitignore; it depends on
		// the host's fd.
		"Find/MatchesFallback": "the host's fd may predate --no-require-git",
	}})
}
