package sshops

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"

	"github.com/pi-sandbox/pi-sandbox/internal/shquote"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/helper"
	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

// The helper is the uploaded shim run as `__shim serve` in one long-lived
// session: the login shell and its rc files run once, when it starts, and
// every command inherits the environment they set up. Where it cannot start,
// SFTP and one session per command (fs.go, run.go) serve.

var (
	_ ops.GrepFS        = (*Backend)(nil)
	_ ops.FindFS        = (*Backend)(nil)
	_ ops.LineCountFS   = (*Backend)(nil)
	_ ops.ReplaceFS     = (*Backend)(nil)
	_ ops.Confiner      = (*Backend)(nil)
	_ ops.ProcessLister = (*Backend)(nil)
)

// helperCommand starts the helper through the login shell. The marker comes
// first on stdout so that what rc files print is skipped. The commands'
// bash must not source ~/.bashrc again (it does when SSH_CLIENT is set and
// SHLVL says it is the top-level shell): the login shell's exec lowers
// SHLVL by one, so 2 here is 1 in the helper, and each command's bash
// counts 2.
func helperCommand(shimPath string) string {
	return "printf '" + outMarker + "'; SHLVL=2; export SHLVL; exec " + shquote.Quote(shimPath) + " __shim serve"
}

func (b *Backend) startHelper(ctx context.Context) {
	switch {
	case b.cfg.NoHelper:
		b.info.Limits = append(b.info.Limits, "no helper (disabled): each command opens a session through the login shell")
		return
	case b.shimPath == "":
		b.info.Limits = append(b.info.Limits, "no helper (no shim on the host): each command opens a session through the login shell")
		return
	}
	h, err := helper.New(ctx, helper.Config{
		Name:    "sshops",
		Dial:    b.dialHelper,
		Restore: b.restoreHelper,
		Hello:   proto.Hello{WorkDir: proto.Str(b.info.WorkDir), SpillDir: proto.Str(b.info.SpillDir), Shell: proto.Str(b.info.Shell), Env: proto.Strs(defaultEnv), MaxBackground: b.cfg.MaxBackground},
	})
	if err != nil {
		b.info.Limits = append(b.info.Limits, "no helper ("+err.Error()+"): each command opens a session through the login shell")
		return
	}
	b.h = h
	for _, c := range h.Info().Capabilities {
		if !b.info.Has(c) {
			b.info.Capabilities = append(b.info.Capabilities, c)
		}
	}
}

// restoreHelper uploads the shim again (a fresh copy under its content
// address) when a helper would not start or answer: the binary was removed
// or replaced since.
func (b *Backend) restoreHelper(ctx context.Context) error {
	h, err := b.hostShim()
	if err != nil {
		return err
	}
	p, err := b.uploadShim(ctx, h)
	if err != nil {
		return err
	}
	b.shimPath = p
	return nil
}

// dialHelper opens the helper's session and returns its stdio, past the
// marker.
func (b *Backend) dialHelper(ctx context.Context) (io.ReadWriteCloser, error) {
	s, c, pipes, err := b.startSession(ctx, helperCommand(b.shimPath))
	if err != nil {
		return nil, err
	}
	st := helper.NewTailBuffer(4 << 10)
	go io.Copy(st, pipes.stderr)
	hs := &helperStream{s: s, release: func() { b.pool.release(c) }, in: pipes.stdin, out: pipes.stdout}
	if !skipPreamble(pipes.stdout) {
		hs.Close()
		return nil, fmt.Errorf("sshops: helper session ended before its marker: %s: %w", strings.TrimSpace(st.String()), ops.ErrTransport)
	}
	return hs, nil
}

// helperStream is the helper session's stdio.
type helperStream struct {
	s       *ssh.Session
	release func()
	in      io.WriteCloser
	out     io.Reader
	once    sync.Once
	mu      sync.Mutex // a Write and the stdin's Close do not overlap
}

func (h *helperStream) Read(p []byte) (int, error) { return h.out.Read(p) }

func (h *helperStream) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.in.Write(p)
}

// Close closes the session (sshd then closes the helper's stdin: it kills
// every command and exits). The stdin's own Close waits for a Write in
// progress, in the background: one blocked on a frozen peer's window ends
// only when the connection does.
func (h *helperStream) Close() error {
	h.once.Do(func() {
		h.s.Close()
		h.release()
		go func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.in.Close()
		}()
	})
	return nil
}

// The operations: the helper's when it runs, else SFTP's and the wrapper's.

func (b *Backend) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	if b.h != nil {
		return b.h.Open(ctx, name)
	}
	return b.sftpOpen(ctx, name)
}

func (b *Backend) OpenWriter(ctx context.Context, name string, flag int, perm fs.FileMode) (io.WriteCloser, error) {
	if b.h != nil {
		return b.h.OpenWriter(ctx, name, flag, perm)
	}
	return b.sftpOpenWriter(ctx, name, flag, perm)
}

func (b *Backend) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	if b.h != nil {
		return b.h.Stat(ctx, name)
	}
	return b.sftpStat(ctx, name)
}

func (b *Backend) Lstat(ctx context.Context, name string) (fs.FileInfo, error) {
	if b.h != nil {
		return b.h.Lstat(ctx, name)
	}
	return b.sftpLstat(ctx, name)
}

func (b *Backend) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	if b.h != nil {
		return b.h.ReadDir(ctx, name)
	}
	return b.sftpReadDir(ctx, name)
}

func (b *Backend) WriteFile(ctx context.Context, name string, data []byte, perm fs.FileMode) error {
	if b.h != nil {
		return b.h.WriteFile(ctx, name, data, perm)
	}
	return b.sftpWriteFile(ctx, name, data, perm)
}

func (b *Backend) MkdirAll(ctx context.Context, name string, perm fs.FileMode) error {
	if b.h != nil {
		return b.h.MkdirAll(ctx, name, perm)
	}
	return b.sftpMkdirAll(ctx, name, perm)
}

func (b *Backend) RealPath(ctx context.Context, name string) (string, error) {
	if b.h != nil {
		return b.h.RealPath(ctx, name)
	}
	return b.sftpRealPath(ctx, name)
}

func (b *Backend) Access(ctx context.Context, name string, mode ops.AccessMode) error {
	if b.h != nil {
		return b.h.Access(ctx, name, mode)
	}
	return b.sftpAccess(ctx, name, mode)
}

func (b *Backend) Remove(ctx context.Context, name string) error {
	if b.h != nil {
		return b.h.Remove(ctx, name)
	}
	return b.sftpRemove(ctx, name)
}

func (b *Backend) CountLines(ctx context.Context, name string) (int64, int64, error) {
	if b.h != nil {
		return b.h.CountLines(ctx, name)
	}
	return b.execCountLines(ctx, name)
}

func (b *Backend) Run(ctx context.Context, cmd *ops.Cmd) error {
	if b.h != nil {
		if err := checkEnv(cmd.Env); err != nil {
			return &ops.StartError{Err: err}
		}
		return b.h.Run(ctx, cmd)
	}
	return b.execRun(ctx, cmd)
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

// ReplaceFile replaces under the helper's lock; without the helper,
// ops.ErrUnsupported (the caller writes the file itself).
func (b *Backend) ReplaceFile(ctx context.Context, name string, old, data []byte) error {
	if b.h != nil {
		return b.h.ReplaceFile(ctx, name, old, data)
	}
	return ops.ErrUnsupported
}

// Confine confines in the helper; without it, ops.ErrUnsupported (the
// sandbox then checks each path before the operation).
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
