package docker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/helper"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/dispatch"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/shellproc"
	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

// The helper is the shim binary run as `__shim serve` in one long-lived
// exec; every operation is a stream over that exec's stdio. Where it cannot
// start, the exec-per-operation scripts (fs.go, stream.go, run.go) serve.

var (
	_ ops.GrepFS        = (*Backend)(nil)
	_ ops.FindFS        = (*Backend)(nil)
	_ ops.LineCountFS   = (*Backend)(nil)
	_ ops.ReplaceFS     = (*Backend)(nil)
	_ ops.Confiner      = (*Backend)(nil)
	_ ops.ProcessLister = (*Backend)(nil)
)

// pausedPoll is how often a call waiting on a paused container looks again.
const pausedPoll = 200 * time.Millisecond

// startHelper starts the helper; on failure the scripts serve and
// Info.Limits says why — except in a container we created: in an `up`
// sandbox, whose daemon owns what earlier calls left running, a helper
// that does not start is an error (the scripts could not see or keep those
// processes), and in an ephemeral one it is too (oursErr).
//
// open is the probe's exec gone on as the helper, or nil; the probe makes
// one only where the helper is to start, and helper.New takes it.
func (b *Backend) startHelper(ctx context.Context, cfg *Config, open io.ReadWriteCloser) error {
	switch {
	case cfg.NoHelper:
		b.info.Limits = append(b.info.Limits, "no helper (disabled): each operation costs one exec")
		return nil
	case b.shimPath == "":
		b.info.Limits = append(b.info.Limits, "no helper (no shim in the container): each operation costs one exec")
		return nil
	}
	hc := helper.Config{
		Name:    "docker",
		Dial:    b.dialHelper,
		Open:    open,
		Restore: b.restoreHelper,
		Explain: b.explainLost,
		Hello:   proto.Hello{WorkDir: proto.Str(b.info.WorkDir), SpillDir: proto.Str(b.info.SpillDir), Shell: proto.Str(b.info.Shell), Env: proto.Strs(b.env), MaxBackground: cfg.MaxBackground, OOMCounter: true},
	}
	if hd, ok := b.hostDaemon(); ok {
		// Tunnels and egress connections on raw connections of the
		// host socket: no HTTP/2 framing between the two ends.
		hc.RawDial = hd.DialRaw
	}
	h, err := helper.New(ctx, hc)
	if err != nil && b.unsealShim(ctx) {
		hc.Open = nil
		h, err = helper.New(ctx, hc)
	}
	if err != nil {
		if b.up {
			return fmt.Errorf("docker: the sandbox's helper daemon cannot be reached (`pi-sandbox down` ends the sandbox and what runs in it): %w", err)
		}
		if b.ephemeral {
			return b.oursErr(err)
		}
		b.info.Limits = append(b.info.Limits, "no helper ("+err.Error()+"): each operation costs one exec")
		return nil
	}
	b.h = h
	hi := h.Info()
	for _, c := range hi.Capabilities {
		if !b.info.Has(c) {
			b.info.Capabilities = append(b.info.Capabilities, c)
		}
	}
	b.mu.Lock()
	exposed := b.exposed
	b.mu.Unlock()
	if exposed {
		b.info.Limits = append(b.info.Limits, exposedLimit)
	}
	b.mu.Lock()
	why := b.hostSockErr
	b.mu.Unlock()
	if why != "" {
		b.info.Limits = append(b.info.Limits, "the helper daemon is reached through an exec: its host socket failed a check ("+why+")")
	}
	return nil
}

// exposedLimit is the Info.Limits entry of an up sandbox whose relay could
// not be sealed (it was dumpable at its exec).
const exposedLimit = "the helper daemon is not authenticated: the relay was dumpable at its start (the shim binary is readable by the sandbox user, or the runtime ignores that), so the sandbox's key is not sent and a process of the sandbox user could take the daemon's place"

// helperArgv is the helper's command line: in an `up` sandbox the relay to
// its long-lived daemon (which owns background processes until down; a
// lost client loses only its calls in flight), else a helper of its own
// that ends with this backend (and ends an ephemeral container with it).
func (b *Backend) helperArgv() []string {
	return append([]string{b.shimPath}, b.helperArgs(b.stateDir+"/helper")...)
}

// helperArgs is helperArgv after the binary, dir the helper's directory
// in the sandbox directory (an up sandbox's daemon socket is there).
func (b *Backend) helperArgs(dir string) []string {
	if b.up {
		return helper.RelayArgs(dir, b.helperKey)
	}
	if b.ephemeral {
		// The container is this session's: when its client is gone (a
		// killed CLI: the engine closes the exec's stdin) it ends, and the
		// engine removes it (AutoRemove).
		return []string{"__shim", "serve", "--end-container"}
	}
	return []string{"__shim", "serve"}
}

// dialHelper starts the helper (helperArgv) in one exec and returns its
// stdio. It never starts an exec into a paused container (that can freeze
// runc's init inside the frozen cgroup): it waits for the unpause until
// ctx ends.
func (b *Backend) dialHelper(ctx context.Context) (io.ReadWriteCloser, error) {
	if err := b.waitUnpaused(ctx); err != nil {
		return nil, err
	}
	if c, ok := b.dialHostSock(ctx); ok {
		return c, nil
	}
	pr, pw := io.Pipe()
	st := helper.NewTailBuffer(4 << 10)
	p, err := b.start(ctx, execSpec{argv: b.helperArgv(), stdin: true, stdout: pw, stderr: st})
	if err != nil {
		pw.Close()
		return nil, err
	}
	go endPipe(p, pw, st, "helper exited")
	s := &execStream{p: p, r: pr, pr: pr, b: b}
	if b.up && b.helperKey != "" {
		// The relay accepts only a daemon proving the sandbox's key (from
		// our label: nothing in the container can read it), which it gets
		// only when no process of the sandbox user could ever read it.
		sealed, err := helper.RelayHello(ctx, s, b.helperKey)
		if err != nil {
			return nil, fmt.Errorf("docker: %w", err)
		}
		b.mu.Lock()
		b.exposed = b.exposed || !sealed
		b.mu.Unlock()
	}
	return s, nil
}

// endPipe ends pw when the exec's output has ended, with what the exec
// said on stderr.
func endPipe(p *proc, pw *io.PipeWriter, st *helper.TailBuffer, what string) {
	<-p.done
	err := p.err
	if err == nil {
		err = io.EOF
		if s := strings.TrimSpace(st.String()); s != "" {
			err = fmt.Errorf("%s: %s: %w", what, s, io.EOF)
		}
	}
	pw.CloseWithError(err)
}

// probeServe runs the probe script in an exec that, when the script finds
// the shim, goes on as the helper: a session's start costs one exec
// instead of two. It returns what the probe printed, and the helper's
// stream when it runs (helper.ReadProbe).
func (b *Backend) probeServe(ctx context.Context, script string) ([]byte, *execStream, error) {
	pr, pw := io.Pipe()
	st := helper.NewTailBuffer(4 << 10)
	p, err := b.start(ctx, execSpec{argv: []string{"/bin/sh", "-c", script}, stdin: true, stdout: pw, stderr: st})
	if err != nil {
		pw.Close()
		return nil, nil, err
	}
	go endPipe(p, pw, st, "exited")
	stop := context.AfterFunc(ctx, func() { pr.CloseWithError(context.Cause(ctx)) })
	br := bufio.NewReader(pr)
	out, serving, err := helper.ReadProbe(br)
	if !stop() {
		err = context.Cause(ctx)
	} else if err != nil {
		err = fmt.Errorf("the probe ended early: %w", err)
	}
	if err != nil || !serving {
		p.closeStream()
		pr.Close()
		return out, nil, err
	}
	return out, &execStream{p: p, r: br, pr: pr, b: b}, nil
}

// holdFor is how long a hold file spares the container (keepAlive): the
// dropped helper sends its SIGTERM once it has ended its calls, within
// some 2.5 s of its stdin's end.
const holdFor = 30 * time.Second

// holds reports whether the end of a helper the backend drops now is to be
// held (holdContainer): its stdin's end ends the container only for
// `__shim serve --end-container`, an ephemeral container's helper
// (helperArgs), and once Close has begun the container goes.
func (b *Backend) holds() bool {
	return b.ephemeral && !b.up && !b.closing.Load()
}

// holdContainer keeps an ephemeral container up through the end of a
// helper that the backend drops and replaces while it goes on (a reply
// over one of the host's bounds, a start that failed): that helper sees
// its stdin end as when the client is gone, and ends the container, which
// the next call's helper would then find stopping (its exec fails and the
// engine's message comes as its output). A hold file, written before the
// old helper's stdin is closed, spares the container that helper's
// SIGTERM.
func (b *Backend) holdContainer() {
	ctx, cancel := context.WithTimeout(context.Background(), holdFor/2)
	defer cancel()
	if err := b.waitUnpaused(ctx); err != nil {
		return // no exec into a paused container; a stopped one is gone
	}
	// The deadline by the container's clock, written under another name
	// and renamed: the trap never reads it half written.
	// As root: only root's hold files count (keepAlive).
	script := `t=$(mktemp /tmp/.pi-sandbox-hold.XXXXXXXX) && echo $(( $(date +%s) + ` + strconv.Itoa(int(holdFor/time.Second)) + ` )) >"$t" && chmod 644 "$t" && mv -f "$t" ` + holdPrefix + `"${t##*.}"`
	b.scriptAs(ctx, true, script, nil)
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
		return fmt.Errorf("docker: restore the sandbox directories: %s", res.failure())
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
	r    io.Reader      // the exec's stdout (from pr, or after the probe's lines)
	pr   *io.PipeReader // the pipe under r
	b    *Backend       // the helper's end is held when b.holds()
	once sync.Once
}

func (s *execStream) Read(p []byte) (int, error)  { return s.r.Read(p) }
func (s *execStream) Write(p []byte) (int, error) { return s.p.hj.Conn.Write(p) }

// Close sends EOF to the helper's stdin (it then kills every command and
// exits) and drops the attachment. Nothing more is read from it at once;
// a helper still running whose end is to be held (Backend.holds) has its
// stdin closed after the hold.
func (s *execStream) Close() error {
	s.once.Do(func() {
		hold := s.b.holds()
		select {
		case <-s.p.done:
			hold = false // the helper has exited: it ends nothing more
		default:
		}
		if !hold {
			s.p.closeStdin()
		}
		s.pr.Close()
		go func() {
			if hold {
				s.b.holdContainer()
				s.p.closeStdin()
			}
			select {
			case <-s.p.done:
			case <-time.After(5 * time.Second):
			}
			s.p.closeStream()
		}()
	})
	return nil
}

// The operations: the helper's when it runs, else the scripts'
// (ops/internal/execops over execer).

// dispatcher is embedded in Backend (an alias keeps the field unexported).
type dispatcher = dispatch.Dispatcher

// initOps sets up the fallback's operations and the dispatch to the helper.
func (b *Backend) initOps() {
	b.x = newExecOps(b)
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

func (b *Backend) Run(ctx context.Context, cmd *ops.Cmd) error {
	if b.h != nil {
		return b.pausedErr(b.h.Run(ctx, cmd))
	}
	return b.x.Run(ctx, cmd)
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

// How long explainLost watches the container: the engine records a killed
// container's exit a little after the exec streams break, and a restart
// starts it again a little after that.
const (
	lostExitWait    = time.Second
	lostRestartWait = 2 * time.Second
)

// explainLost says what happened to the container when a call lost the
// helper's stream: it stopped (with its exit code) or was restarted. err
// stays wrapped (ops.ErrTransport). A helper over one of its bounds is the
// helper's doing, not the container's.
func (b *Backend) explainLost(err error) error {
	var le *helper.LimitError
	if errors.As(err, &le) {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), lostExitWait+lostRestartWait+2*time.Second)
	defer cancel()
	exitBy := time.Now().Add(lostExitWait)
	var stopped *container.State
	for delay := 20 * time.Millisecond; ; delay = min(2*delay, 200*time.Millisecond) {
		res, ierr := b.cli.ContainerInspect(ctx, b.id, client.ContainerInspectOptions{})
		if ierr != nil {
			if cerrdefs.IsNotFound(ierr) {
				return fmt.Errorf("docker: container %.12s was removed: %w", b.id, err)
			}
			break
		}
		s := res.Container.State
		if s == nil {
			break
		}
		if s.Running && b.startedAt != "" && s.StartedAt != b.startedAt {
			return fmt.Errorf("docker: container %.12s was restarted: %w", b.id, err)
		}
		if !s.Running && stopped == nil {
			stopped = s
			exitBy = time.Now().Add(lostRestartWait) // it may come back: a restart
		}
		if time.Now().After(exitBy) {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
	}
	if stopped != nil {
		return fmt.Errorf("docker: container %.12s stopped (exited with %d): %w", b.id, stopped.ExitCode, err)
	}
	return err
}
