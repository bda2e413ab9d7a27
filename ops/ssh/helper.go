package sshops

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"

	"github.com/pi-sandbox/pi-sandbox/internal/shquote"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/helper"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/dispatch"
	"github.com/pi-sandbox/pi-sandbox/ops/shim"
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

// helperCommand starts the helper through the login shell and /bin/sh. The
// cached binary's bytes are checked first, on an open descriptor, and the
// descriptor runs (shim.PinScript): a command of an earlier session that
// replaced the file gets nothing of it run. A binary that differs ends the
// session before the marker, and the helper's Restore uploads it again.
// The marker comes first on stdout so that what rc files print is skipped.
// The commands' bash must not source ~/.bashrc again (it does when
// SSH_CLIENT is set and SHLVL says it is the top-level shell): SHLVL is 1
// in the helper, and each command's bash counts 2.
func helperCommand(shimPath string, up *shim.Upload) string {
	script := shim.PinScript + `pin_shim "$1" "$2" "$3"
case $? in
0) ;;
2) echo "sshops: ` + shim.ErrPinUnchecked.Error() + `" >&2; exit 1;;
*) echo "sshops: $1 is not the uploaded helper binary (sha256 $3)" >&2; exit 1;;
esac
printf '` + outMarker + `'; SHLVL=1; export SHLVL; exec ` + shim.PinExe + ` __shim serve`
	return "exec /bin/sh -c " + shquote.Quote(script) + " helper " + up.PinArgs(shimPath)
}

// open is the probe's session gone on as the helper, or nil; the probe
// makes one only where the helper is to start, and helper.New takes it.
func (b *Backend) startHelper(ctx context.Context, open io.ReadWriteCloser) {
	switch {
	case b.cfg.NoHelper:
		b.info.Limits = append(b.info.Limits, "no helper (disabled): each command opens a session through the login shell")
		return
	case b.shimPath == "" || b.shimUp == nil:
		b.info.Limits = append(b.info.Limits, "no helper (no shim on the host): each command opens a session through the login shell")
		return
	}
	h, err := helper.New(ctx, helper.Config{
		Name:    "sshops",
		Dial:    b.dialHelper,
		Open:    open,
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
	b.shimPath, b.shimUp = p, h.up
	return nil
}

// dialHelper opens the helper's session and returns its stdio, past the
// marker.
func (b *Backend) dialHelper(ctx context.Context) (io.ReadWriteCloser, error) {
	s, c, pipes, err := b.startSession(ctx, helperCommand(b.shimPath, b.shimUp))
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

// closeHelper stops the helper of a backend that will not be returned.
func (b *Backend) closeHelper() {
	if b.h != nil {
		b.h.Close()
		b.h = nil
	}
}

// probeServe runs the probe in a session that, when the script finds the
// shim, goes on as the helper: it returns what the probe printed and, then,
// the helper's stream (helper.ReadProbe).
func (b *Backend) probeServe(ctx context.Context, command string) ([]byte, *helperStream, error) {
	s, c, pipes, err := b.startSession(ctx, command)
	if err != nil {
		return nil, nil, err
	}
	st := helper.NewTailBuffer(4 << 10)
	go io.Copy(st, pipes.stderr)
	br := bufio.NewReader(pipes.stdout)
	hs := &helperStream{s: s, release: func() { b.pool.release(c) }, in: pipes.stdin, out: br}
	stop := context.AfterFunc(ctx, func() { hs.Close() })
	out, serving, err := helper.ReadProbe(br)
	if !stop() {
		err = ops.Canceled(ctx)
	} else if errors.Is(err, helper.ErrProbeOutput) {
		err = fmt.Errorf("%w: %w", err, ops.ErrTransport)
	} else if err != nil {
		err = fmt.Errorf("the probe session ended early: %s: %w", strings.TrimSpace(st.String()), ops.ErrTransport)
	}
	if err != nil || !serving {
		hs.Close()
		return out, nil, err
	}
	return out, hs, nil
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

// The operations: the helper's when it runs, else SFTP's and the
// wrapper's (fallback).

// dispatcher is embedded in Backend (an alias keeps the field unexported).
type dispatcher = dispatch.Dispatcher

// fallback serves without the helper: SFTP for files (fs.go, write.go), a
// session per command (run.go), rg/fd and wc there (search.go).
type fallback struct{ *Backend }

func (b *Backend) fallback() fallback { return fallback{b} }

// initOps sets up the dispatch to the helper or the fallback.
func (b *Backend) initOps() {
	b.dispatcher = dispatch.Dispatcher{
		Helper: func() dispatch.Helper {
			if b.h == nil {
				return nil
			}
			return b.h
		},
		Fallback: b.fallback(),
		Owner:    b,
	}
}

// RunSpill has the helper save the output (ops.SpillRunner), with the
// environment names checked as Run checks them.
func (b *Backend) RunSpill(ctx context.Context, cmd *ops.Cmd, sp *ops.Spill) error {
	if err := checkEnv(cmd.Env, cmd.BaseEnv); err != nil {
		return &ops.StartError{Err: err}
	}
	return b.dispatcher.RunSpill(ctx, cmd, sp)
}

func (b *Backend) Run(ctx context.Context, cmd *ops.Cmd) error {
	if b.h != nil {
		if err := checkEnv(cmd.Env, cmd.BaseEnv); err != nil {
			return &ops.StartError{Err: err}
		}
		return b.h.Run(ctx, cmd)
	}
	return b.fallback().Run(ctx, cmd)
}
