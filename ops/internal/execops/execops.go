package execops

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"path"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// Execer starts processes in the target; see the package doc for the
// contract.
type Execer interface {
	Start(ctx context.Context, spec Spec) (Process, error)
}

// Spec describes one process.
type Spec struct {
	Argv []string
	// Root runs the process as uid 0 instead of the target's user.
	Root bool
	// Stdin, when not nil, is copied to the process's stdin, which is then
	// closed.
	Stdin io.Reader
	// StdinPipe asks for Process.Stdin instead of Stdin.
	StdinPipe bool
	// Stdout and Stderr receive the process's output; nil discards.
	Stdout, Stderr io.Writer
}

// Process is a started process.
type Process interface {
	// Stdin is the write side of the process's stdin with Spec.StdinPipe
	// (Close is EOF for the process), else nil.
	Stdin() io.WriteCloser
	// Done is closed once both output streams have ended.
	Done() <-chan struct{}
	// Err is why the streams ended (nil: a clean end), valid after Done.
	Err() error
	// Wait returns the exit code once the process has exited, or an error
	// wrapping ops.ErrTransport when that cannot be known.
	Wait(ctx context.Context) (int, error)
	// Close tears down the stream; it kills nothing in the target.
	Close()
}

// Config is a transport and its optional hooks.
type Config struct {
	Exec Execer
	// Name prefixes error texts ("docker").
	Name string
	// Lost describes a target that stopped answering during a call (a
	// script ended without its status); the error must wrap ops.ErrTransport
	// and cause. Nil: a plain wrap.
	Lost func(cause error) error
	// Stopped reports whether the target itself stops within a short while
	// (so a command's missing status is the target's death). Nil: never.
	Stopped func() bool
	// RetryKill is called in a goroutine of its own when a kill could not
	// start (a paused container): it calls try until try reports true or
	// the target is gone. Nil: the kill is given up.
	RetryKill func(try func() bool)
}

// Target holds what a probe of the target found, for commands.
type Target struct {
	WorkDir string   // default working directory
	Shell   string   // absolute path of the commands' shell
	Env     []string // base environment of commands (KEY=VALUE)
	// RunDir is a writable directory for per-call pid files and long
	// commands.
	RunDir string
	// Shim returns the shim's path in the target, "" without one.
	Shim func() string
	// OOMProbe is a shellproc.Spec.Probe that reads the cgroup's oom_kill
	// counter ("" when there is none).
	OOMProbe string
}

// Ops is an ops.FS, ops.Runner, ops.LineCountFS, ops.GrepFS and ops.FindFS
// over an Execer. Info and Close stay with the backend.
type Ops struct {
	cfg Config
	t   Target
}

// New returns the operations over cfg.Exec. Scripts work at once; Run,
// Grep and Find need SetTarget first.
func New(cfg Config) *Ops {
	if cfg.Name == "" {
		cfg.Name = "execops"
	}
	return &Ops{cfg: cfg}
}

// SetTarget records the probed facts. Call it before the first Run, not
// concurrently with calls.
func (o *Ops) SetTarget(t Target) {
	t.Env = append([]string(nil), t.Env...)
	o.t = t
}

func (o *Ops) shim() string {
	if o.t.Shim == nil {
		return ""
	}
	return o.t.Shim()
}

// lost wraps cause for a target that stopped answering.
func (o *Ops) lost(cause error) error {
	if o.cfg.Lost != nil {
		return o.cfg.Lost(cause)
	}
	return fmt.Errorf("%s: %w: %w", o.cfg.Name, ops.ErrTransport, cause)
}

func (o *Ops) stopped() bool { return o.cfg.Stopped != nil && o.cfg.Stopped() }

// errorf is a *fs.PathError-free error with the backend's prefix.
func (o *Ops) errorf(format string, args ...any) error {
	return fmt.Errorf(o.cfg.Name+": "+format, args...)
}

// NewCallID returns a random name for per-call files.
func NewCallID() string {
	var rnd [8]byte
	rand.Read(rnd[:])
	return hex.EncodeToString(rnd[:])
}

// validPath checks the ops path grammar: absolute and clean.
func validPath(op, name string) error {
	if !path.IsAbs(name) || path.Clean(name) != name {
		return ops.PathError(op, name, ops.EINVAL)
	}
	return nil
}
