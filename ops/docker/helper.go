package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/helper"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/shellproc"
	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

// The helper is the shim binary run as `__shim serve` in one long-lived
// exec; every operation is a stream over that exec's stdio. Where it cannot
// start, the exec-per-operation scripts (fs.go, stream.go, run.go) serve.

var (
	_ ops.GrepFS        = (*Backend)(nil)
	_ ops.FindFS        = (*Backend)(nil)
	_ ops.ReplaceFS     = (*Backend)(nil)
	_ ops.Confiner      = (*Backend)(nil)
	_ ops.ProcessLister = (*Backend)(nil)
)

// pausedPoll is how often a call waiting on a paused container looks again.
const pausedPoll = 200 * time.Millisecond

// startHelper starts the helper; on failure the scripts serve and
// Info.Limits says why.
func (b *Backend) startHelper(ctx context.Context, cfg *Config) {
	switch {
	case cfg.NoHelper:
		b.info.Limits = append(b.info.Limits, "no helper (disabled): each operation costs one exec")
		return
	case b.shimPath == "":
		b.info.Limits = append(b.info.Limits, "no helper (no shim in the container): each operation costs one exec")
		return
	}
	h, err := helper.New(ctx, helper.Config{
		Name:    "docker",
		Dial:    b.dialHelper,
		Restore: b.restoreHelper,
		Hello:   proto.Hello{WorkDir: proto.Str(b.info.WorkDir), SpillDir: proto.Str(b.info.SpillDir), Shell: proto.Str(b.info.Shell), Env: proto.Strs(b.env), MaxBackground: cfg.MaxBackground},
	})
	if err != nil {
		b.info.Limits = append(b.info.Limits, "no helper ("+err.Error()+"): each operation costs one exec")
		return
	}
	b.h = h
	hi := h.Info()
	for _, c := range hi.Capabilities {
		if !b.info.Has(c) {
			b.info.Capabilities = append(b.info.Capabilities, c)
		}
	}
}

// dialHelper starts `SHIM __shim serve` in one exec and returns its stdio.
// It never starts an exec into a paused container (that can freeze runc's
// init inside the frozen cgroup): it waits for the unpause until ctx ends.
func (b *Backend) dialHelper(ctx context.Context) (io.ReadWriteCloser, error) {
	if err := b.waitUnpaused(ctx); err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	st := helper.NewTailBuffer(4 << 10)
	p, err := b.start(ctx, execSpec{argv: []string{b.shimPath, "__shim", "serve"}, stdin: true, stdout: pw, stderr: st})
	if err != nil {
		pw.Close()
		return nil, err
	}
	go func() {
		<-p.done
		err := p.err
		if err == nil {
			err = io.EOF
			if s := strings.TrimSpace(st.String()); s != "" {
				err = fmt.Errorf("helper exited: %s: %w", s, io.EOF)
			}
		}
		pw.CloseWithError(err)
	}()
	return &execStream{p: p, r: pr}, nil
}

// restoreHelper brings back what a restart of the container may have lost
// (a tmpfs), or someone changed: the sandbox's directories, and a fresh
// upload of the shim binary (a stale or replaced one may still answer
// `version` and yet not serve).
func (b *Backend) restoreHelper(ctx context.Context) error {
	if err := b.waitUnpaused(ctx); err != nil {
		return err
	}
	res, err := b.script(ctx, "mkdir -p "+shellproc.Quote(b.info.SpillDir)+" "+shellproc.Quote(b.runDir), nil)
	if err != nil {
		return err
	}
	if res.code != 0 {
		return fmt.Errorf("docker: restore the sandbox directories: %s", strings.TrimSpace(res.stderr))
	}
	p, err := b.uploadShim(ctx, b.sf)
	if err != nil {
		return err
	}
	b.shimPath = p
	return nil
}

// waitUnpaused returns when the container is running and not paused, or
// an error saying it is paused when ctx ends first.
func (b *Backend) waitUnpaused(ctx context.Context) error {
	for {
		res, err := b.cli.ContainerInspect(ctx, b.id, client.ContainerInspectOptions{})
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("docker: container %.12s: %w: %w", b.id, ops.ErrTransport, context.Cause(ctx))
			}
			return b.engineErr("container inspect", err)
		}
		s := res.Container.State
		if s == nil || !s.Running {
			return b.goneErr(errors.New("not running"))
		}
		if !s.Paused {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("docker: container %.12s is paused: %w: %w", b.id, ops.ErrTransport, context.Cause(ctx))
		case <-time.After(pausedPoll):
		}
	}
}

// execStream is the helper exec's stdio.
type execStream struct {
	p    *proc
	r    *io.PipeReader
	once sync.Once
}

func (s *execStream) Read(p []byte) (int, error)  { return s.r.Read(p) }
func (s *execStream) Write(p []byte) (int, error) { return s.p.hj.Conn.Write(p) }

// Close sends EOF to the helper's stdin (it then kills every command and
// exits) and drops the attachment.
func (s *execStream) Close() error {
	s.once.Do(func() {
		s.p.closeStdin()
		s.r.Close()
		go func() {
			select {
			case <-s.p.done:
			case <-time.After(5 * time.Second):
			}
			s.p.closeStream()
		}()
	})
	return nil
}

// The operations: the helper's when it runs, else the scripts'.

func (b *Backend) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	if b.h != nil {
		return b.h.Open(ctx, name)
	}
	return b.execOpen(ctx, name)
}

func (b *Backend) OpenWriter(ctx context.Context, name string, flag int, perm fs.FileMode) (io.WriteCloser, error) {
	if b.h != nil {
		return b.h.OpenWriter(ctx, name, flag, perm)
	}
	return b.execOpenWriter(ctx, name, flag, perm)
}

func (b *Backend) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	if b.h != nil {
		return b.h.Stat(ctx, name)
	}
	return b.execStat(ctx, name)
}

func (b *Backend) Lstat(ctx context.Context, name string) (fs.FileInfo, error) {
	if b.h != nil {
		return b.h.Lstat(ctx, name)
	}
	return b.execLstat(ctx, name)
}

func (b *Backend) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	if b.h != nil {
		return b.h.ReadDir(ctx, name)
	}
	return b.execReadDir(ctx, name)
}

func (b *Backend) WriteFile(ctx context.Context, name string, data []byte, perm fs.FileMode) error {
	if b.h != nil {
		return b.h.WriteFile(ctx, name, data, perm)
	}
	return b.execWriteFile(ctx, name, data, perm)
}

func (b *Backend) MkdirAll(ctx context.Context, name string, perm fs.FileMode) error {
	if b.h != nil {
		return b.h.MkdirAll(ctx, name, perm)
	}
	return b.execMkdirAll(ctx, name, perm)
}

func (b *Backend) RealPath(ctx context.Context, name string) (string, error) {
	if b.h != nil {
		return b.h.RealPath(ctx, name)
	}
	return b.execRealPath(ctx, name)
}

func (b *Backend) Access(ctx context.Context, name string, mode ops.AccessMode) error {
	if b.h != nil {
		return b.h.Access(ctx, name, mode)
	}
	return b.execAccess(ctx, name, mode)
}

func (b *Backend) Remove(ctx context.Context, name string) error {
	if b.h != nil {
		return b.h.Remove(ctx, name)
	}
	return b.execRemove(ctx, name)
}

func (b *Backend) CountLines(ctx context.Context, name string) (int64, int64, error) {
	if b.h != nil {
		return b.h.CountLines(ctx, name)
	}
	return b.execCountLines(ctx, name)
}

func (b *Backend) Run(ctx context.Context, cmd *ops.Cmd) error {
	if b.h != nil {
		return b.pausedErr(b.h.Run(ctx, cmd))
	}
	return b.execRun(ctx, cmd)
}

// pausedErr says so when a call that ended by its deadline (or a timeout)
// met a paused container: nothing in it could run.
func (b *Backend) pausedErr(err error) error {
	var te *ops.TimeoutError
	if err == nil || !(errors.Is(err, context.DeadlineExceeded) || errors.As(err, &te)) {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	res, ierr := b.cli.ContainerInspect(ctx, b.id, client.ContainerInspectOptions{})
	if ierr == nil && res.Container.State != nil && res.Container.State.Paused {
		return fmt.Errorf("docker: container %.12s is paused: %w", b.id, err)
	}
	return err
}

func (b *Backend) Grep(ctx context.Context, q *ops.GrepQuery, fn func(ops.GrepEvent) error) error {
	if b.h != nil {
		return b.h.Grep(ctx, q, fn)
	}
	return b.execGrep(ctx, q, fn)
}

func (b *Backend) Find(ctx context.Context, q *ops.FindQuery, fn func(string) error) error {
	if b.h != nil {
		return b.h.Find(ctx, q, fn)
	}
	return b.execFind(ctx, q, fn)
}

// Processes lists the background processes the helper owns; without the
// helper there are none (they die with their command).
func (b *Backend) Processes(ctx context.Context) ([]ops.Process, error) {
	if b.h != nil {
		return b.h.Processes(ctx)
	}
	return nil, nil
}

// ReplaceFile replaces under the helper's lock; the scripts cannot
// (ops.ErrUnsupported: the caller writes the file itself).
func (b *Backend) ReplaceFile(ctx context.Context, name string, old, data []byte) error {
	if b.h != nil {
		return b.h.ReplaceFile(ctx, name, old, data)
	}
	return ops.ErrUnsupported
}

// Confine confines in the helper; the scripts cannot (ops.ErrUnsupported:
// the sandbox then checks each path before the operation).
func (b *Backend) Confine(ctx context.Context, roots []ops.Root) (ops.Backend, error) {
	if b.h == nil {
		return nil, ops.ErrUnsupported
	}
	v, err := b.h.Confine(ctx, roots)
	if err != nil {
		return nil, err
	}
	return helper.Owned(v, b.Info, b.Close), nil
}
