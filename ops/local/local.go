package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/helper"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/native"
	"github.com/pi-sandbox/pi-sandbox/ops/shim"
	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

var (
	_ ops.Backend        = (*Backend)(nil)
	_ ops.LineCountFS    = (*Backend)(nil)
	_ ops.GrepFS         = (*Backend)(nil)
	_ ops.FindFS         = (*Backend)(nil)
	_ ops.ReplaceFS      = (*Backend)(nil)
	_ ops.WriteParentsFS = (*Backend)(nil)
	_ ops.Confiner       = (*Backend)(nil)
	_ ops.ProcessLister  = (*Backend)(nil)
	_ ops.TargetDialer   = (*Backend)(nil)
	_ ops.CheckpointFS   = (*Backend)(nil)
	_ ops.TargetListener = (*Backend)(nil)
)

// Config configures a local backend. The zero value is usable: the current
// directory, a private spill directory, the host environment, and the
// helper when the executable provides the shim.
type Config struct {
	// WorkDir is the working directory for tools and commands. Zero: the
	// current directory. A relative path is made absolute.
	WorkDir string

	// SpillDir is the directory for spill files. Zero: a fresh private
	// directory (mode 0700) under os.TempDir(), removed by Close. A directory
	// given here is used as it is and not removed.
	SpillDir string

	// Shell runs commands as `Shell -c COMMAND`. Zero: /bin/bash when it
	// exists, else /bin/sh.
	Shell string

	// Env is the base environment of commands; Cmd.Env is added on top.
	// Nil: the host environment (os.Environ at New).
	Env []string

	// ShimPath is a binary that runs the shim (`ShimPath __shim run`) for
	// every command. Zero: shim.LocalBinary(): $PI_SANDBOX_SHIM_BIN, else
	// pi-sandbox-shim next to this executable, else os.Executable() when it
	// dispatches the shim (shim.Dispatch was called in this process).
	// Without one New fails with a *shim.BinaryError unless NoHelper is set.
	ShimPath string

	// MaxBackground bounds the background process groups the helper owns
	// (zero: 64).
	MaxBackground int

	// NoHelper asks for the fallback path: operations run directly in this
	// process (package ops/internal/native) instead of through the
	// helper's session, and the shim binary is not required. Commands still
	// run under the shim when there is one; without it they are killed by
	// process group only (a process that calls setsid survives), and
	// Info.Limits says so.
	NoHelper bool
}

// Backend is the local ops backend: a helper session served in this
// process (the same server that runs inside containers and on ssh hosts),
// or the operations run directly where the helper cannot run. It is safe
// for concurrent use.
type Backend struct {
	inner     ops.Backend
	info      ops.Info
	ownsSpill bool
	closeOnce sync.Once
	closeErr  error
}

// New opens a local backend. ctx bounds the helper's start.
func New(ctx context.Context, cfg Config) (*Backend, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	wd := cfg.WorkDir
	if wd == "" {
		var err error
		if wd, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("local: working directory: %w", err)
		}
	}
	wd, err := filepath.Abs(wd)
	if err != nil {
		return nil, fmt.Errorf("local: working directory: %w", err)
	}
	if fi, err := os.Stat(wd); err != nil {
		return nil, fmt.Errorf("local: working directory: %w", ops.PathError("stat", wd, ops.ErrnoOf(err)))
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("local: working directory: %w", ops.PathError("chdir", wd, ops.ENOTDIR))
	}
	shimPath, why, err := shimFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	b := &Backend{}
	spill := cfg.SpillDir
	if spill == "" {
		if spill, err = os.MkdirTemp("", "pi-sandbox-spill-"); err != nil {
			return nil, fmt.Errorf("local: spill directory: %w", err)
		}
		b.ownsSpill = true
	}
	var limits []string
	if shimPath != "" && !cfg.NoHelper {
		env := cfg.Env
		if env == nil {
			env = os.Environ()
		}
		env = append(env[:len(env):len(env)], shimEnvExtra...)
		c, err := helper.New(ctx, helper.Config{
			Name: "local",
			Dial: func(context.Context) (io.ReadWriteCloser, error) {
				return shim.InProcess(shimPath, env), nil
			},
			Hello: proto.Hello{WorkDir: proto.Str(wd), SpillDir: proto.Str(spill), Shell: proto.Str(cfg.Shell), MaxBackground: cfg.MaxBackground},
		})
		if err == nil {
			b.inner = c
		} else {
			limits = append(limits, "no helper ("+err.Error()+"): operations run in this process")
		}
	} else if cfg.NoHelper {
		limits = append(limits, "no helper (disabled): operations run in this process")
	} else {
		limits = append(limits, "no helper ("+why+"): operations run in this process")
	}
	if b.inner == nil {
		nb, err := native.New(ctx, native.Config{WorkDir: wd, SpillDir: spill, Shell: cfg.Shell, Env: cfg.Env, ShimPath: shimPath, NoShim: shimPath == ""})
		if err != nil {
			b.removeSpill()
			return nil, fmt.Errorf("local: %w", err)
		}
		b.inner = nb
	}
	b.info = b.inner.Info()
	b.info.Backend = "local"
	b.info.CheckpointDir = checkpointDir(wd)
	// Commands start from this process's environment (or Config.Env).
	b.info.Capabilities = append(append([]string(nil), b.info.Capabilities...), ops.CapHostEnv, ops.CapSharedLoopback)
	b.info.Limits = append(b.info.Limits, limits...)
	return b, nil
}

// shimFor names the shim binary, or says why there is none: this OS has no
// shim (the fallback serves), or none was found, which fails New unless
// NoHelper waives it.
func shimFor(cfg Config) (path, why string, err error) {
	switch {
	case runtime.GOOS != "linux":
		return "", "no shim on " + runtime.GOOS, nil
	case cfg.ShimPath != "":
		return cfg.ShimPath, "", nil
	}
	p, err := shim.LocalBinary()
	switch {
	case err == nil:
		return p, "", nil
	case cfg.NoHelper:
		return "", shim.LimitReason(err), nil
	}
	return "", "", err
}

// Helper returns the helper client, nil when operations run in this
// process.
func (b *Backend) Helper() *helper.Client {
	c, _ := b.inner.(*helper.Client)
	return c
}

// Info describes the local machine. The returned slices are copies.
func (b *Backend) Info() ops.Info {
	i := b.info
	i.Capabilities = append([]string(nil), i.Capabilities...)
	i.Limits = append([]string(nil), i.Limits...)
	return i
}

// Close stops the helper (and every command it runs) and removes the spill
// directory when New created it. It is safe to call twice.
func (b *Backend) Close() error {
	b.closeOnce.Do(func() {
		b.closeErr = b.inner.Close()
		b.removeSpill()
	})
	return b.closeErr
}

func (b *Backend) removeSpill() {
	if b.ownsSpill {
		if err := os.RemoveAll(b.info.SpillDir); err != nil && !errors.Is(err, os.ErrNotExist) && b.closeErr == nil {
			b.closeErr = fmt.Errorf("local: remove spill directory: %w", err)
		}
	}
}

func (b *Backend) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	return b.inner.Open(ctx, name)
}

func (b *Backend) OpenWriter(ctx context.Context, name string, flag int, perm fs.FileMode) (io.WriteCloser, error) {
	return b.inner.OpenWriter(ctx, name, flag, perm)
}

func (b *Backend) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	return b.inner.Stat(ctx, name)
}

func (b *Backend) Lstat(ctx context.Context, name string) (fs.FileInfo, error) {
	return b.inner.Lstat(ctx, name)
}

func (b *Backend) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	return b.inner.ReadDir(ctx, name)
}

func (b *Backend) WriteFile(ctx context.Context, name string, data []byte, perm fs.FileMode) error {
	return b.inner.WriteFile(ctx, name, data, perm)
}

func (b *Backend) MkdirAll(ctx context.Context, name string, perm fs.FileMode) error {
	return b.inner.MkdirAll(ctx, name, perm)
}

func (b *Backend) RealPath(ctx context.Context, name string) (string, error) {
	return b.inner.RealPath(ctx, name)
}

func (b *Backend) Access(ctx context.Context, name string, mode ops.AccessMode) error {
	return b.inner.Access(ctx, name, mode)
}

func (b *Backend) Remove(ctx context.Context, name string) error {
	return b.inner.Remove(ctx, name)
}

func (b *Backend) Run(ctx context.Context, cmd *ops.Cmd) error {
	return b.inner.Run(ctx, cmd)
}

// CountLines counts newlines where the file is.
func (b *Backend) CountLines(ctx context.Context, name string) (int64, int64, error) {
	return ops.CountLines(ctx, b.inner, name)
}

// Grep searches in the helper; without it, ops.ErrUnsupported (callers
// then walk the file system themselves).
func (b *Backend) Grep(ctx context.Context, q *ops.GrepQuery, fn func(ops.GrepEvent) error) error {
	if g, ok := b.inner.(ops.GrepFS); ok {
		return g.Grep(ctx, q, fn)
	}
	return ops.ErrUnsupported
}

// Find finds in the helper; without it, ops.ErrUnsupported.
func (b *Backend) Find(ctx context.Context, q *ops.FindQuery, fn func(string) error) error {
	if f, ok := b.inner.(ops.FindFS); ok {
		return f.Find(ctx, q, fn)
	}
	return ops.ErrUnsupported
}

// ReplaceFile replaces under the helper's lock; without it,
// ops.ErrUnsupported.
func (b *Backend) ReplaceFile(ctx context.Context, name string, old, data []byte) error {
	if r, ok := b.inner.(ops.ReplaceFS); ok {
		return r.ReplaceFile(ctx, name, old, data)
	}
	return ops.ErrUnsupported
}

// WriteFileParents writes in one round trip to the helper
// (ops.WriteParentsFS); without it, ops.ErrUnsupported.
func (b *Backend) WriteFileParents(ctx context.Context, name string, data []byte, perm fs.FileMode) error {
	if w, ok := b.inner.(ops.WriteParentsFS); ok {
		return w.WriteFileParents(ctx, name, data, perm)
	}
	return ops.ErrUnsupported
}

// OpenChecked checks, stats and opens name in one round trip to the
// helper (ops.CheckedOpenFS); without it, ops.ErrUnsupported (the steps cost
// nothing in this process).
func (b *Backend) OpenChecked(ctx context.Context, name string, mode ops.AccessMode) (fs.FileInfo, io.ReadCloser, error) {
	if co, ok := b.inner.(ops.CheckedOpenFS); ok {
		return co.OpenChecked(ctx, name, mode)
	}
	return nil, nil, ops.ErrUnsupported
}

// RunSpill runs cmd with its output saved by the helper (ops.SpillRunner);
// without it, ops.ErrUnsupported.
func (b *Backend) RunSpill(ctx context.Context, cmd *ops.Cmd, s *ops.Spill) error {
	if sr, ok := b.inner.(ops.SpillRunner); ok {
		return sr.RunSpill(ctx, cmd, s)
	}
	return ops.ErrUnsupported
}

// ListDir lists in one round trip to the helper (ops.ListFS); without it,
// ops.ErrUnsupported.
func (b *Backend) ListDir(ctx context.Context, name string) (fs.FileInfo, []ops.ListEntry, error) {
	if l, ok := b.inner.(ops.ListFS); ok {
		return l.ListDir(ctx, name)
	}
	return nil, nil, ops.ErrUnsupported
}

// ChecksDir reports whether Run checks cmd.Dir in the same round trip as
// the command (the helper: ops.DirCheckingRunner).
func (b *Backend) ChecksDir() bool {
	dc, ok := b.inner.(ops.DirCheckingRunner)
	return ok && dc.ChecksDir()
}

// Processes lists the background processes the helper owns.
func (b *Backend) Processes(ctx context.Context) ([]ops.Process, error) {
	if p, ok := b.inner.(ops.ProcessLister); ok {
		return p.Processes(ctx)
	}
	return nil, nil
}

// Confine confines in the helper; without it, ops.ErrUnsupported (the
// sandbox then checks paths before each operation).
func (b *Backend) Confine(ctx context.Context, roots []ops.Root) (ops.Backend, error) {
	c, ok := b.inner.(ops.Confiner)
	if !ok {
		return nil, ops.ErrUnsupported
	}
	v, err := c.Confine(ctx, roots)
	if err != nil {
		return nil, err
	}
	// The view, with the local Info (CapHostEnv) and Close.
	return helper.Owned(v, b.Info, b.Close), nil
}

// DialTarget connects to 127.0.0.1:port on this host: a plain TCP dial.
func (b *Backend) DialTarget(ctx context.Context, port int) (net.Conn, error) {
	if port < 1 || port > 65535 {
		return nil, fmt.Errorf("local: dial: %w: port %d out of range", ops.ErrConfig, port)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	return c, nil
}

// ListenTarget listens on 127.0.0.1 of this host (an ephemeral port).
func (b *Backend) ListenTarget(ctx context.Context) (net.Listener, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	return ln, nil
}
