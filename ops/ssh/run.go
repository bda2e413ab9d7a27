package sshops

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// killWait bounds the kill that follows a cancel or timeout: the second
// session that runs kill, and the wait for the first session to end.
const killWait = 5 * time.Second

// Run runs cmd.Command under the wrapper (see wrapScript) in a session of its
// own. See [ops.Runner] for the outcomes.
func (b fallback) Run(ctx context.Context, cmd *ops.Cmd) error {
	if ctx.Err() != nil {
		return ops.Canceled(ctx)
	}
	if err := checkEnv(cmd.Env, cmd.BaseEnv); err != nil {
		return &ops.StartError{Err: err}
	}
	dir := cmd.Dir
	if dir == "" {
		dir = b.info.WorkDir
	}
	base := defaultEnv
	if cmd.BaseEnv != nil {
		base = cmd.BaseEnv
	}
	env := append(append([]string(nil), base...), cmd.Env...)
	start := time.Now()

	// The timeout covers waiting for a session too (a saturated pool).
	sctx := ctx
	if cmd.Timeout > 0 {
		var cancel context.CancelFunc
		sctx, cancel = context.WithTimeout(ctx, cmd.Timeout)
		defer cancel()
	}
	s, c, pipes, err := b.startSession(sctx, remoteCommand(dir, b.info.Shell, b.shimPath, b.shimUp, cmd.Command, env, cmd.BaseEnv != nil))
	if err != nil {
		if ctx.Err() == nil && sctx.Err() != nil {
			return &ops.TimeoutError{Limit: cmd.Timeout}
		}
		if ctx.Err() != nil {
			return ops.Canceled(ctx)
		}
		return err
	}
	defer b.pool.release(c)
	defer s.Close()
	stdin, stdout, stderr := pipes.stdin, pipes.stdout, pipes.stderr

	r := &runState{
		b: b.Backend, s: s, c: c, stdin: stdin, out: cmd.Output, dir: dir,
		activity:    make(chan struct{}, 1),
		outDone:     make(chan struct{}),
		control:     make(chan controlEvent, 8),
		sessionDone: make(chan struct{}),
		pgidKnown:   make(chan struct{}),
	}
	go r.copyOut(stdout)
	go r.readControl(stderr)
	go func() { r.waitErr = s.Wait(); close(r.sessionDone) }()
	defer r.stop()

	var timeout <-chan time.Time
	if cmd.Timeout > 0 {
		t := time.NewTimer(cmd.Timeout - time.Since(start))
		defer t.Stop()
		timeout = t.C
	}
	var (
		grace     *time.Timer
		graceC    <-chan time.Time
		exited    bool
		exitCode  int
		exitAt    time.Time
		stdoutEOF bool // cat's "eof": every holder closed the output
		outDone   = r.outDone
		sessDone  = r.sessionDone
	)
	// finish ends a command whose shell exited: closing stdin makes the
	// wrapper kill what is left of the group and exit, and sshd's channel
	// EOF then marks the end of the output exactly (the control channel's
	// "eof" may overtake the last chunk).
	finish := func(bound time.Duration) error {
		r.closeStdin()
		t := time.NewTimer(bound)
		defer t.Stop()
		select {
		case <-r.outDone:
		case <-t.C:
		}
		r.waitSession(bound)
		return exitErr(exitCode)
	}
	for {
		select {
		case <-ctx.Done():
			r.kill()
			return ops.Canceled(ctx)
		case <-timeout:
			r.kill()
			te := &ops.TimeoutError{Limit: cmd.Timeout}
			if exited {
				te.ShellExited, te.ShellExitCode, te.ShellRuntime = true, exitCode, exitAt.Sub(start)
			}
			return te
		case ev := <-r.control:
			switch ev.kind {
			case "exit":
				// With a shim this comes twice: the shim's "exited" at
				// once, the wrapper's "exit" after the shim's grace.
				exitCode = ev.n
				if stdoutEOF {
					return finish(killWait)
				}
				if !exited {
					exited, exitAt = true, time.Now()
					grace = time.NewTimer(ops.ExitGrace)
					defer grace.Stop()
					graceC = grace.C
				}
			case "eof":
				// cat has written everything to the channel; wait for our
				// copy of it too.
				stdoutEOF = true
				if exited {
					return finish(killWait)
				}
			case "start":
				r.waitSession(killWait)
				return ev.err
			}
		case <-r.activity:
			if grace != nil {
				grace.Reset(ops.ExitGrace)
			}
		case <-graceC:
			// An orphan holds the output open but has gone quiet; one
			// that escaped the group may hold it for ever. Quiet is
			// confirmed first: after a stall of this process the timer
			// and the output it missed are ready together.
			if !ops.StillQuiet(r.activity, r.outDone) {
				grace.Reset(ops.ExitGrace)
				continue
			}
			return finish(time.Second)
		case <-outDone:
			outDone = nil
		case <-sessDone:
			// The wrapper ended without reporting an exit: killed, or the
			// connection dropped.
			sessDone = nil
			if exited {
				return finish(time.Second)
			}
			if ev, ok := r.drainControl(); ok {
				if ev.kind == "start" {
					return ev.err
				}
				exited, exitCode = true, ev.n
				return finish(time.Second)
			}
			return r.lostStatus(ctx)
		}
	}
}

type sessionPipes struct {
	stdin          io.WriteCloser
	stdout, stderr io.Reader
}

// startSession opens a session and starts command in it. A connection that
// died before the command started (a dropped connection not yet noticed) is
// replaced once: nothing ran, so trying again is safe.
func (b *Backend) startSession(ctx context.Context, command string) (*ssh.Session, *conn, sessionPipes, error) {
	for attempt := 0; ; attempt++ {
		s, c, err := b.pool.session(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, sessionPipes{}, ops.Canceled(ctx)
			}
			return nil, nil, sessionPipes{}, err
		}
		var p sessionPipes
		var err1, err2, err3 error
		p.stdin, err1 = s.StdinPipe()
		p.stdout, err2 = s.StdoutPipe()
		p.stderr, err3 = s.StderrPipe()
		err = errors.Join(err1, err2, err3)
		if err == nil {
			err = s.Start(command)
		}
		if err == nil {
			return s, c, p, nil
		}
		s.Close()
		b.pool.release(c)
		if b.pool.waitDead(c, 300*time.Millisecond) {
			if attempt == 0 && b.pool.dial != nil {
				continue
			}
			return nil, nil, sessionPipes{}, b.pool.transportErr("run", err)
		}
		return nil, nil, sessionPipes{}, &ops.StartError{Err: fmt.Errorf("sshops: exec: %w", err)}
	}
}

// exitErr turns the wrapper's status into Run's result. sh reports a
// signal death as 128+n; like the docker backend we read statuses 129..192
// that way (a command that exits 130 itself looks the same).
func exitErr(code int) error {
	switch {
	case code == 0:
		return nil
	case code > 128 && code <= 128+64:
		return &ops.ExitError{Code: code, Signal: code - 128}
	}
	return &ops.ExitError{Code: code}
}

// runState is one Run in flight.
type runState struct {
	b     *Backend
	s     *ssh.Session
	c     *conn
	stdin io.WriteCloser
	dir   string

	mu      sync.Mutex
	out     io.Writer
	stopped bool

	activity    chan struct{}
	outDone     chan struct{}
	control     chan controlEvent
	sessionDone chan struct{}
	waitErr     error

	pgidMu    sync.Mutex
	pgid      int
	pgidKnown chan struct{}
	stdinOnce sync.Once
}

type controlEvent struct {
	kind string // "pgid", "exit" or "start"
	n    int
	err  error
}

// copyOut delivers output chunks as they arrive, never after Run returned.
// What comes before the wrapper's marker is the login shell's and dropped.
func (r *runState) copyOut(stdout io.Reader) {
	defer close(r.outDone)
	if !skipPreamble(stdout) {
		return
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := stdout.Read(buf)
		if n > 0 {
			r.mu.Lock()
			if !r.stopped && r.out != nil {
				r.out.Write(buf[:n])
			}
			r.mu.Unlock()
			select {
			case r.activity <- struct{}{}:
			default:
			}
		}
		if err != nil {
			return
		}
	}
}

// skipPreamble reads up to and including outMarkerBytes, one byte at a time
// so that no output after it is consumed. It reports false when the stream
// ended first.
func skipPreamble(r io.Reader) bool {
	var window []byte
	one := make([]byte, 1)
	for {
		n, err := r.Read(one)
		if n == 1 {
			window = append(window, one[0])
			if len(window) > len(outMarkerBytes) {
				window = window[1:]
			}
			if string(window) == outMarkerBytes {
				return true
			}
		}
		if err != nil {
			return false
		}
	}
}

// readControl parses the wrapper's reports on the session's stderr.
func (r *runState) readControl(stderr io.Reader) {
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "pi-sandbox-shim: "); ok {
			r.shimLine(rest)
			continue
		}
		rest, ok := strings.CutPrefix(line, "pi-sandbox-ssh: ")
		if !ok {
			continue // the login shell's rc files, say
		}
		f := strings.Fields(rest)
		if len(f) == 1 && f[0] == "eof" {
			r.control <- controlEvent{kind: "eof"}
			continue
		}
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "pgid":
			if n, err := strconv.Atoi(f[1]); err == nil {
				r.pgidMu.Lock()
				if r.pgid == 0 {
					r.pgid = n
					close(r.pgidKnown)
				}
				r.pgidMu.Unlock()
			}
		case "exit":
			if n, err := strconv.Atoi(f[1]); err == nil {
				r.control <- controlEvent{kind: "exit", n: n}
			}
		case "eof":
			r.control <- controlEvent{kind: "eof"}
		case "start":
			var err error
			switch {
			case f[1] == "chdir" && len(f) > 2:
				err = ops.PathError("chdir", r.dir, ops.Errno(f[2]))
			case f[1] == "shim":
				err = fmt.Errorf("sshops: the helper binary %s on the remote host is not the one uploaded (changed since) and was not run; the next session uploads it again", r.b.shimPath)
			default:
				err = fmt.Errorf("sshops: %s not found on the remote host", f[1])
			}
			r.control <- controlEvent{kind: "start", err: &ops.StartError{Err: err}}
		}
	}
	io.Copy(io.Discard, stderr)
}

// shimLine parses the shim's reports: "exited N" when the command's shell
// ended (before the shim's grace), "start: OP PATH: CODE" when it could not
// start.
func (r *runState) shimLine(rest string) {
	if st, ok := strings.CutPrefix(rest, "exited "); ok {
		if n, err := strconv.Atoi(strings.TrimSpace(st)); err == nil {
			r.control <- controlEvent{kind: "exit", n: n}
		}
		return
	}
	if st, ok := strings.CutPrefix(rest, "start: "); ok {
		if i := strings.LastIndex(st, ": "); i > 0 {
			op, p, _ := strings.Cut(st[:i], " ")
			r.control <- controlEvent{kind: "start", err: &ops.StartError{Err: ops.PathError(op, p, ops.Errno(st[i+2:]))}}
		}
	}
}

// drainControl returns an exit or start report that raced with the
// session's end.
func (r *runState) drainControl() (controlEvent, bool) {
	t := time.NewTimer(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case ev := <-r.control:
			if ev.kind == "exit" || ev.kind == "start" {
				return ev, true
			}
		case <-t.C:
			return controlEvent{}, false
		}
	}
}

// lostStatus explains a session that ended without the wrapper's report.
func (r *runState) lostStatus(ctx context.Context) error {
	err := r.waitErr
	var ee *ssh.ExitError
	if errors.As(err, &ee) {
		code := ee.ExitStatus()
		if sig := ee.Signal(); sig != "" {
			code = 128 + signalNumber(sig)
			return &ops.ExitError{Code: code, Signal: code - 128}
		}
		if code == 0 {
			return nil
		}
		return &ops.ExitError{Code: code}
	}
	// The channel closed without a status: a dead connection, or a server
	// that dropped it. Give the connection watcher a moment to notice.
	select {
	case <-r.c.dead:
	case <-time.After(500 * time.Millisecond):
	}
	if r.c.isDead() {
		return r.b.pool.transportErr("run", err)
	}
	if ctx.Err() != nil {
		return ops.Canceled(ctx)
	}
	if err == nil {
		err = errors.New("no report from the wrapper")
	}
	return fmt.Errorf("sshops: run: %w: %w", ops.ErrExitUnknown, err)
}

func (r *runState) closeStdin() {
	r.stdinOnce.Do(func() { r.stdin.Close() })
}

// waitSession waits up to d for the session to end (the wrapper exits after
// its watchdog killed the group).
func (r *runState) waitSession(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.sessionDone:
	case <-t.C:
	}
}

// kill stops the whole process tree. Three ways, because none is enough
// alone: closing stdin fires the wrapper's watchdog; a second session runs
// kill on the recorded group (mandatory: OpenSSH before 10.0 refuses signal
// requests for root logins, and closing a session does not kill a command
// without a TTY); and a signal request for servers that honour it.
func (r *runState) kill() {
	r.closeStdin()
	r.s.Signal(ssh.SIGKILL)
	t := time.NewTimer(killWait)
	defer t.Stop()
	select {
	case <-r.pgidKnown:
	case <-r.sessionDone:
	case <-t.C:
	}
	r.pgidMu.Lock()
	pgid := r.pgid
	r.pgidMu.Unlock()
	if pgid > 1 {
		ctx, cancel := context.WithTimeout(context.Background(), killWait)
		script := fmt.Sprintf("kill -9 -%d 2>/dev/null; true", pgid)
		if r.b.shimPath != "" {
			script = fmt.Sprintf("p=%d x=1; %s; kill -9 -$p 2>/dev/null; true", pgid, shimStop)
		}
		r.b.runShort(ctx, script)
		cancel()
	}
	r.waitSession(time.Second)
}

// stop ends output delivery; later chunks are dropped.
func (r *runState) stop() {
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
	r.s.Close()
}

// maxShortOutput bounds what a short command (a probe, a version check)
// may print: the target is not trusted.
const maxShortOutput = 1 << 20

// shortOutput collects a short command's output up to maxShortOutput,
// then closes over.
type shortOutput struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	over chan struct{}
	once sync.Once
}

func (o *shortOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.buf.Len()+len(p) > maxShortOutput {
		o.once.Do(func() { close(o.over) })
		return 0, errors.New("over the bound")
	}
	return o.buf.Write(p)
}

// runShort runs a short command in a session of its own and returns its
// combined output; one that prints more than maxShortOutput is ended.
func (b *Backend) runShort(ctx context.Context, command string) ([]byte, error) {
	s, c, err := b.pool.session(ctx)
	if err != nil {
		return nil, err
	}
	defer b.pool.release(c)
	defer s.Close()
	type res struct {
		out []byte
		err error
	}
	ch := make(chan res, 1)
	out := &shortOutput{over: make(chan struct{})}
	s.Stdout, s.Stderr = out, out
	go func() {
		err := s.Run(command)
		out.mu.Lock()
		data := bytes.Clone(out.buf.Bytes())
		out.mu.Unlock()
		ch <- res{data, err}
	}()
	select {
	case <-out.over:
		s.Close()
		return nil, fmt.Errorf("sshops: the output of a short command exceeds 1 MiB")
	case r := <-ch:
		if r.err != nil && c.isDead() {
			return r.out, b.pool.transportErr("exec", r.err)
		}
		return r.out, r.err
	case <-ctx.Done():
		s.Close()
		return nil, context.Cause(ctx)
	}
}

// signalNumber maps an SSH signal name to its Linux number.
func signalNumber(name string) int {
	switch ssh.Signal(name) {
	case ssh.SIGABRT:
		return 6
	case ssh.SIGALRM:
		return 14
	case ssh.SIGFPE:
		return 8
	case ssh.SIGHUP:
		return 1
	case ssh.SIGILL:
		return 4
	case ssh.SIGINT:
		return 2
	case ssh.SIGKILL:
		return 9
	case ssh.SIGPIPE:
		return 13
	case ssh.SIGQUIT:
		return 3
	case ssh.SIGSEGV:
		return 11
	case ssh.SIGTERM:
		return 15
	case ssh.SIGUSR1:
		return 10
	case ssh.SIGUSR2:
		return 12
	}
	return 0
}
