package docker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/shellproc"
)

// Timings of Run's endgame.
const (
	// pgidWait bounds waiting for the wrapper's pgid line before a kill.
	pgidWait = time.Second
	// killWait bounds waiting for the stream to end after the kill exec.
	killWait = time.Second
	// inspectEvery is how often ExecInspect is polled while a command runs,
	// to notice a wrapper that died without its exit line.
	inspectEvery = 250 * time.Millisecond
	// maxInlineCommand is the longest command passed in the exec's argv.
	maxInlineCommand = 96 << 10
	// shimSlack is added to the exit grace when the shim, which applies the
	// grace itself, is in charge.
	shimSlack = 2 * time.Second
)

// Run runs cmd in the container under the shellproc wrapper (and the shim
// when it was uploaded). See ops.Runner for the outcomes; engine failures
// and a container that stops under the command wrap ops.ErrTransport.
func (b *Backend) execRun(ctx context.Context, cmd *ops.Cmd) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("docker: run: %w", ops.Canceled(ctx))
	}
	dir := cmd.Dir
	if dir == "" {
		dir = b.info.WorkDir
	}
	callID := newCallID()
	pidFile := b.runDir + "/" + callID
	command := cmd.Command
	if len(command) > maxInlineCommand {
		// Linux caps one exec argument at 128 KiB (MAX_ARG_STRLEN): a
		// longer command goes to a file first and is sourced from it.
		f := b.runDir + "/" + callID + ".sh"
		res, err := b.script(ctx, "cat > "+shellproc.Quote(f), strings.NewReader(command))
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("docker: run: %w", ops.Canceled(ctx))
			}
			return err
		}
		if res.code != 0 {
			return &ops.StartError{Err: fmt.Errorf("docker: write the command to %s: %s", f, strings.TrimSpace(res.stderr))}
		}
		command = ". " + shellproc.Quote(f)
	}
	script, err := shellproc.Script(shellproc.Spec{
		Command: command,
		Shell:   b.info.Shell,
		Dir:     dir,
		Env:     append(append([]string{}, b.env...), cmd.Env...),
		PIDFile: pidFile,
		Shim:    b.shimPath,
		Probe:   b.oomProbe,
	})
	if err != nil {
		return &ops.StartError{Err: err}
	}
	out := &activityWriter{w: cmd.Output, ch: make(chan struct{}, 1)}
	ctl := newControlWriter(dir)
	p, err := b.start(ctx, execSpec{argv: []string{"/bin/sh", "-c", script}, stdout: out, stderr: ctl})
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("docker: run: %w", ops.Canceled(ctx))
		}
		return err
	}
	started := time.Now()
	defer func() {
		p.closeStream()
		<-p.done // no write to cmd.Output after Run returns
	}()

	var timeoutC <-chan time.Time
	if cmd.Timeout > 0 {
		t := time.NewTimer(cmd.Timeout)
		defer t.Stop()
		timeoutC = t.C
	}
	tick := time.NewTicker(inspectEvery)
	defer tick.Stop()
	var (
		grace      *time.Timer
		graceC     <-chan time.Time
		exitAt     time.Time
		inspectEnd = -1 // exit code from ExecInspect when the wrapper died
	)
	graceDur := ops.ExitGrace
	if b.shimPath != "" {
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
	for {
		select {
		case <-p.done:
			return b.finish(p, ctl, inspectEnd)
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
			b.kill(p, ctl, pidFile)
			return b.finish(p, ctl, inspectEnd)
		case <-tick.C:
			if grace != nil {
				continue
			}
			ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
			running, code, err := p.inspect(ictx)
			cancel()
			if err == nil && !running {
				inspectEnd = code
				armGrace()
			}
		case <-ctx.Done():
			b.kill(p, ctl, pidFile)
			return fmt.Errorf("docker: run: %w", ops.Canceled(ctx))
		case <-timeoutC:
			// How the shell ended, as seen before our kill.
			te := &ops.TimeoutError{Limit: cmd.Timeout}
			if c := ctl.snapshot(); c.HaveExit && grace != nil {
				te.ShellExited, te.ShellExitCode = true, c.Exit
				te.ShellRuntime = exitAt.Sub(started)
			}
			b.kill(p, ctl, pidFile)
			return te
		}
	}
}

// finish turns the ended stream into Run's result.
func (b *Backend) finish(p *proc, ctl *controlWriter, inspectEnd int) error {
	c := ctl.snapshot()
	if c.Start != nil {
		return &ops.StartError{Err: c.Start}
	}
	code := c.Exit
	if !c.HaveExit {
		if b.containerStops() {
			return fmt.Errorf("docker: run: %w", b.goneErr(ops.ErrExitUnknown))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if inspectEnd >= 0 {
			code = inspectEnd
		} else {
			wctx, wcancel := context.WithTimeout(ctx, 2*time.Second)
			n, err := p.waitExit(wctx)
			wcancel()
			if err != nil {
				return fmt.Errorf("docker: run: %w: %w", ops.ErrExitUnknown, err)
			}
			code = n
		}
	}
	if code == 0 {
		return nil
	}
	if !c.Done && b.containerStops() {
		// The wrapper was killed with the container (it may still have
		// reported its child's death first).
		return fmt.Errorf("docker: run: %w", b.goneErr(ops.ErrExitUnknown))
	}
	ee := &ops.ExitError{Code: code}
	if code > 128 && code <= 128+64 {
		ee.Signal = code - 128
	}
	ee.OOMKilled = b.oomKilled(c)
	return ee
}

// containerStops reports whether the container stops running within a
// short while: the engine records a killed container's exit a little after
// the exec streams break.
func (b *Backend) containerStops() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, 200*time.Millisecond) {
		if !b.containerRunning(ctx) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(delay):
		}
		if delay >= 200*time.Millisecond {
			return false
		}
	}
}

// oomKilled compares the cgroup's oom_kill counter before and after the
// command; when the wrapper died before its "after" probe, it reads the
// counter now.
func (b *Backend) oomKilled(c shellproc.Control) bool {
	if b.oomFile == "" || c.ProbeBefore == "" {
		return false
	}
	after := c.ProbeAfter
	if after == "" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		res, err := b.script(ctx, "pv=\n"+b.oomProbe+"\necho \"$pv\"", nil)
		if err != nil {
			return false
		}
		after = strings.TrimSpace(string(res.stdout))
	}
	x, err1 := strconv.Atoi(c.ProbeBefore)
	y, err2 := strconv.Atoi(after)
	return err1 == nil && err2 == nil && y > x
}

// kill ends the command's tree with a second exec, then stops waiting for
// the stream. It never fails: a container that cannot exec any more (gone,
// paused) is left to its fate, and the stream is closed regardless.
func (b *Backend) kill(p *proc, ctl *controlWriter, pidFile string) {
	select {
	case <-ctl.pgidKnown:
	case <-p.done:
		return
	case <-time.After(pgidWait):
	}
	c := ctl.snapshot()
	var script string
	switch {
	case b.shimPath != "":
		// The shim sweeps setsid escapees; the group kill follows.
		script = shellproc.KillScript(pidFile, b.shimPath)
		if c.PGID > 0 {
			script = strings.TrimSuffix(script, "exit 0") + shellproc.KillGroupScript(c.PGID)
		}
	case c.PGID > 0:
		script = shellproc.KillGroupScript(c.PGID)
	default:
		script = shellproc.KillScript(pidFile, "")
	}
	if !b.runKill(script) {
		// A paused container cannot exec: kill the tree as soon as it runs
		// again, so nothing the command started outlives the pause.
		go b.killWhenRunnable(script)
	}
	select {
	case <-p.done:
	case <-time.After(killWait):
	}
	p.closeStream()
}

// runKill runs the kill script in a second exec and reports whether it ran.
func (b *Backend) runKill(script string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	kp, err := b.start(ctx, execSpec{argv: []string{"/bin/sh", "-c", script}})
	if err != nil {
		return false
	}
	defer kp.closeStream()
	select {
	case <-kp.done:
		return true
	case <-ctx.Done():
		return false
	}
}

// killRetryFor bounds how long a kill waits for a paused container.
const killRetryFor = 10 * time.Minute

// killWhenRunnable retries the kill script once the container is running
// and not paused; it gives up when the container is gone or stopped (its
// processes are dead then) or after killRetryFor.
func (b *Backend) killWhenRunnable(script string) {
	for deadline := time.Now().Add(killRetryFor); time.Now().Before(deadline); {
		time.Sleep(250 * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		res, err := b.cli.ContainerInspect(ctx, b.id, client.ContainerInspectOptions{})
		cancel()
		if err != nil || res.Container.State == nil || !res.Container.State.Running {
			return
		}
		if res.Container.State.Paused {
			continue
		}
		if b.runKill(script) {
			return
		}
	}
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
