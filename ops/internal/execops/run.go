package execops

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/shellproc"
)

// Timings of Run's endgame.
const (
	// pgidWait bounds waiting for the wrapper's pgid line before a kill.
	pgidWait = time.Second
	// killWait bounds waiting for the stream to end after the kill exec.
	killWait = time.Second
	// maxInlineCommand is the longest command passed in the exec's argv.
	maxInlineCommand = 96 << 10
	// shimSlack is added to the exit grace when the shim, which applies the
	// grace itself, is in charge.
	shimSlack = 2 * time.Second
)

// exitStatus is what Process.Wait returned.
type exitStatus struct {
	code int
	err  error
}

// Run runs cmd in the target under the shellproc wrapper (and the shim
// when there is one). See ops.Runner for the outcomes; transport failures
// and a target that stops under the command wrap ops.ErrTransport.
func (o *Ops) Run(ctx context.Context, cmd *ops.Cmd) error {
	if err := ctx.Err(); err != nil {
		return o.errorf("run: %w", ops.Canceled(ctx))
	}
	dir := cmd.Dir
	if dir == "" {
		dir = o.t.WorkDir
	}
	shim := o.shim()
	callID := NewCallID()
	pidFile := o.t.RunDir + "/" + callID
	command := cmd.Command
	if len(command) > maxInlineCommand {
		// Linux caps one exec argument at 128 KiB (MAX_ARG_STRLEN): a
		// longer command goes to a file first and is sourced from it.
		f := o.t.RunDir + "/" + callID + ".sh"
		res, err := o.Script(ctx, "cat > "+shellproc.Quote(f), strings.NewReader(command))
		if err != nil {
			if ctx.Err() != nil {
				return o.errorf("run: %w", ops.Canceled(ctx))
			}
			return err
		}
		if res.Code != 0 {
			return &ops.StartError{Err: o.errorf("write the command to %s: %s", f, strings.TrimSpace(res.Stderr))}
		}
		command = ". " + shellproc.Quote(f)
	}
	// The base: the target's environment with o.t.Env, or cmd.BaseEnv
	// alone.
	env := append(append([]string{}, o.t.Env...), cmd.Env...)
	if cmd.BaseEnv != nil {
		env = append(append([]string{}, cmd.BaseEnv...), cmd.Env...)
	}
	script, err := shellproc.Script(shellproc.Spec{
		Command:  command,
		Shell:    o.t.Shell,
		Dir:      dir,
		Env:      env,
		ClearEnv: cmd.BaseEnv != nil,
		PIDFile:  pidFile,
		Shim:     shim,
		Probe:    o.t.OOMProbe,
	})
	if err != nil {
		return &ops.StartError{Err: err}
	}
	out := &activityWriter{w: cmd.Output, ch: make(chan struct{}, 1)}
	ctl := newControlWriter(dir)
	p, err := o.cfg.Exec.Start(ctx, Spec{Argv: []string{"/bin/sh", "-c", script}, Stdout: out, Stderr: ctl})
	if err != nil {
		if ctx.Err() != nil {
			return o.errorf("run: %w", ops.Canceled(ctx))
		}
		return err
	}
	started := time.Now()
	defer func() {
		p.Close()
		<-p.Done() // no write to cmd.Output after Run returns
	}()
	// The exit as the transport sees it: it notices a wrapper that died
	// without its exit line while orphans hold the stream.
	wctx, wcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer wcancel()
	exitC := make(chan exitStatus, 1)
	go func() {
		code, err := p.Wait(wctx)
		exitC <- exitStatus{code, err}
	}()
	r := &runState{o: o, p: p, ctl: ctl, out: out, pidFile: pidFile, shim: shim, exitC: exitC, inspectEnd: -1}

	var timeoutC <-chan time.Time
	if cmd.Timeout > 0 {
		t := time.NewTimer(cmd.Timeout)
		defer t.Stop()
		timeoutC = t.C
	}
	var (
		grace  *time.Timer
		graceC <-chan time.Time
		exitAt time.Time
	)
	graceDur := ops.ExitGrace
	if shim != "" {
		graceDur += shimSlack
	}
	armGrace := func() {
		exitAt = time.Now()
		grace = time.NewTimer(graceDur)
		graceC = grace.C
	}
	defer func() {
		if grace != nil {
			grace.Stop()
		}
	}()
	exitedC := ctl.exited
	waitC := (<-chan exitStatus)(exitC)
	for {
		select {
		case <-p.Done():
			return r.finish()
		case <-exitedC:
			exitedC = nil
			if grace == nil {
				armGrace()
			}
		case <-out.ch:
			if grace != nil {
				grace.Reset(graceDur)
			}
		case <-graceC:
			// Orphans hold the output and have gone quiet: end them, as
			// the local backend's final group kill does.
			if !ops.StillQuiet(out.ch, nil) {
				grace.Reset(graceDur)
				continue
			}
			r.kill()
			return r.finish()
		case st := <-waitC:
			waitC = nil
			r.exit, r.haveExit = st, true
			if st.err == nil {
				r.inspectEnd = st.code
				if grace == nil {
					armGrace()
				}
			}
		case <-ctx.Done():
			r.kill()
			return o.errorf("run: %w", ops.Canceled(ctx))
		case <-timeoutC:
			// How the shell ended, as seen before our kill.
			te := &ops.TimeoutError{Limit: cmd.Timeout}
			if c := ctl.snapshot(); c.HaveExit && grace != nil {
				te.ShellExited, te.ShellExitCode = true, c.Exit
				te.ShellRuntime = exitAt.Sub(started)
			}
			r.kill()
			return te
		}
	}
}

// runState is one command's process and what is known of its end.
type runState struct {
	o          *Ops
	p          Process
	ctl        *controlWriter
	out        io.Writer // cmd.Output
	pidFile    string
	shim       string
	exitC      <-chan exitStatus
	exit       exitStatus
	haveExit   bool // exit came from exitC
	inspectEnd int  // exit code from Wait before the stream ended, -1
}

// finish turns the ended stream into Run's result.
func (r *runState) finish() error {
	o := r.o
	c := r.ctl.snapshot()
	if c.Start != nil {
		return &ops.StartError{Err: c.Start}
	}
	code := c.Exit
	if !c.HaveExit {
		if o.stopped() {
			return o.errorf("run: %w", o.lost(ops.ErrExitUnknown))
		}
		if r.inspectEnd >= 0 {
			code = r.inspectEnd
		} else {
			if !r.haveExit {
				select {
				case r.exit = <-r.exitC:
				case <-time.After(2 * time.Second):
					r.exit.err = fmt.Errorf("%w: no exit status within 2s", ops.ErrTransport)
				}
			}
			if r.exit.err != nil {
				return o.errorf("run: %w: %w", ops.ErrExitUnknown, r.exit.err)
			}
			code = r.exit.code
		}
	}
	if code == 0 {
		if o.oomKilled(c) {
			// The shell survived, a process of its tree did not: say so
			// in the output, the only place a success can carry it (after
			// the stream's last write: Output has one writer at a time).
			r.p.Close()
			<-r.p.Done()
			r.out.Write([]byte(ops.OOMNote))
		}
		return nil
	}
	if c.ForkFailed {
		// The wrapper or the shim could not fork: the command may never
		// have run, and its "(no output) … code 254" would mislead.
		return &ops.StartError{Err: ops.ErrProcessLimit}
	}
	if !c.Done && o.stopped() {
		// The wrapper was killed with the target (it may still have
		// reported its child's death first).
		return o.errorf("run: %w", o.lost(ops.ErrExitUnknown))
	}
	ee := &ops.ExitError{Code: code}
	if code > 128 && code <= 128+64 {
		ee.Signal = code - 128
	}
	ee.OOMKilled = o.oomKilled(c)
	return ee
}

// oomKilled compares the cgroup's oom_kill counter before and after the
// command; when the wrapper died before its "after" probe, it reads the
// counter now.
func (o *Ops) oomKilled(c shellproc.Control) bool {
	if o.t.OOMProbe == "" || c.ProbeBefore == "" {
		return false
	}
	after := c.ProbeAfter
	if after == "" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		res, err := o.Script(ctx, "pv=\n"+o.t.OOMProbe+"\necho \"$pv\"", nil)
		if err != nil {
			return false
		}
		after = strings.TrimSpace(string(res.Stdout))
	}
	x, err1 := strconv.Atoi(c.ProbeBefore)
	y, err2 := strconv.Atoi(after)
	return err1 == nil && err2 == nil && y > x
}

// kill ends the command's tree with a second process, then stops waiting
// for the stream. It never fails: a target that cannot exec any more (gone,
// paused) is left to its fate (or to Config.RetryKill), and the stream is
// closed regardless.
func (r *runState) kill() {
	o, p := r.o, r.p
	select {
	case <-r.ctl.pgidKnown:
	case <-p.Done():
		if r.ctl.snapshot().Done {
			return // the wrapper ended and killed its group itself
		}
	case <-time.After(pgidWait):
	}
	c := r.ctl.snapshot()
	var script string
	switch {
	case r.shim != "":
		// The shim sweeps setsid escapees; the group kill follows.
		script = shellproc.KillScript(r.pidFile, r.shim)
		if c.PGID > 0 {
			script = strings.TrimSuffix(script, "exit 0") + shellproc.KillGroupScript(c.PGID)
		}
	case c.PGID > 0:
		script = shellproc.KillGroupScript(c.PGID)
	default:
		script = shellproc.KillScript(r.pidFile, "")
	}
	if !o.kill(script) && o.cfg.RetryKill != nil {
		// A paused container cannot exec: kill the tree as soon as it runs
		// again, so nothing the command started outlives the pause.
		go o.cfg.RetryKill(func() bool { return o.kill(script) })
	}
	select {
	case <-p.Done():
	case <-time.After(killWait):
	}
	p.Close()
}

// kill runs a kill script as the target's user, bounded.
func (o *Ops) kill(script string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return o.runKill(ctx, false, script)
}

// activityWriter forwards output and signals each chunk (re-arming the exit
// grace).
type activityWriter struct {
	w  io.Writer
	ch chan struct{}
}

func (a *activityWriter) Write(p []byte) (int, error) {
	select {
	case a.ch <- struct{}{}:
	default:
	}
	if a.w == nil {
		return len(p), nil
	}
	// A failing sink must not stop the copy (that would cut the stream
	// and lose the exit status); its error is not Run's to report.
	a.w.Write(p)
	return len(p), nil
}

// controlWriter parses the wrapper's control lines as they arrive.
type controlWriter struct {
	dir       string
	mu        sync.Mutex
	buf       bytes.Buffer
	ctl       shellproc.Control
	pgidKnown chan struct{}
	exited    chan struct{}
	pgidOnce  sync.Once
	exitOnce  sync.Once
}

func newControlWriter(dir string) *controlWriter {
	return &controlWriter{dir: dir, pgidKnown: make(chan struct{}), exited: make(chan struct{})}
}

func (c *controlWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	for {
		line, err := c.buf.ReadString('\n')
		if err != nil {
			// Keep the partial line for the next write.
			rest := []byte(line)
			c.buf.Reset()
			c.buf.Write(rest)
			break
		}
		c.ctl.ParseLine(strings.TrimSuffix(line, "\n"), c.dir)
		if strings.HasPrefix(line, "pi-sandbox-shim: exited ") {
			// The shim reports the shell's exit before its grace.
			if n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "pi-sandbox-shim: exited "))); err == nil && !c.ctl.HaveExit {
				c.ctl.Exit, c.ctl.HaveExit = n, true
			}
		}
		if c.ctl.PGID > 0 {
			c.pgidOnce.Do(func() { close(c.pgidKnown) })
		}
		if c.ctl.HaveExit {
			c.exitOnce.Do(func() { close(c.exited) })
		}
	}
	return len(p), nil
}

func (c *controlWriter) snapshot() shellproc.Control {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ctl
}
