//go:build unix

package native

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A pooled shim is `SHIM __shim run --runs FD`, started before its first
// command is known: it serves runs (arguments, environment, and the run's
// two pipes) sent over the unix socket FD, one after another, and stays
// for the next one after a command that exited normally and left nothing
// behind (package shim, runs_linux.go). A backend that runs many commands
// (the helper) keeps such shims, so a command pays writing its spec — not
// the start and exit of a Go program (an exec, the runtime's start, page
// faults and threads: about 9 ms of CPU a command in a container on a
// small VM, where bash itself takes 2.5). The run itself is exactly what a
// shim started for it would do.

// errSpecNUL: a spec cannot carry the run (w is unharmed).
var errSpecNUL = errors.New("local: NUL in a shim argument")

// The pool keeps as many idle shims as calls ran in parallel, up to
// maxPooled, so a burst of parallel calls that comes again starts no
// process but its shells; once none has been taken or given back for
// trimAfter, it keeps keepPooled (an idle shim is about 1 MiB of private
// memory and 7 threads, which count against a container's pids limit).
const (
	maxPooled  = 32
	keepPooled = 4
)

var trimAfter = 30 * time.Second // a variable for the tests

// warmShim is one started shim waiting for a run.
type warmShim struct {
	cmd    *exec.Cmd
	ctl    *os.File // our end of the socket the runs go through
	waitCh chan error
}

// warmPool holds the idle shims: a run takes one and gives it back when
// the shim says it is reusable. An empty pool is refilled when a run ends
// (refillWarm): a fresh shim's start then overlaps the reply's trip and the
// next request's, not the command, on a machine with few cores.
type warmPool struct {
	b *Backend

	mu      sync.Mutex
	ready   []*warmShim
	filling chan struct{} // closed when the start in progress ends; nil: none
	closed  bool
	trim    *time.Timer    // trims the idle shims to keepPooled; nil: not armed
	fills   sync.WaitGroup // a start in progress (close waits: it uses the backend's files)
}

func newWarmPool(b *Backend) *warmPool {
	p := &warmPool{b: b}
	p.fill()
	return p
}

// take returns an idle shim, waiting for a start in progress (it is
// nearer than a new one); nil when there is none (the caller starts one
// the usual way).
func (p *warmPool) take() *warmShim {
	p.mu.Lock()
	if ch := p.filling; len(p.ready) == 0 && ch != nil {
		p.mu.Unlock()
		<-ch
		p.mu.Lock()
	}
	var w *warmShim
	if n := len(p.ready); n > 0 {
		w = p.ready[n-1]
		p.ready = p.ready[:n-1]
	}
	p.armTrim()
	p.mu.Unlock()
	return w
}

// armTrim (re)starts the trim timer while more than keepPooled shims are
// idle; p.mu is held.
func (p *warmPool) armTrim() {
	switch {
	case len(p.ready) <= keepPooled || p.closed:
	case p.trim == nil:
		p.trim = time.AfterFunc(trimAfter, p.trimIdle)
	default:
		p.trim.Reset(trimAfter)
	}
}

// trimIdle discards the idle shims beyond keepPooled, the longest idle
// first (the pool is a stack).
func (p *warmPool) trimIdle() {
	p.mu.Lock()
	var extra []*warmShim
	if n := len(p.ready) - keepPooled; n > 0 {
		extra = append(extra, p.ready[:n]...)
		p.ready = append(p.ready[:0], p.ready[n:]...)
	}
	p.mu.Unlock()
	for _, w := range extra {
		go w.discard()
	}
}

// put gives back a shim that said it is reusable.
func (p *warmPool) put(w *warmShim) {
	p.mu.Lock()
	if p.closed || len(p.ready) >= maxPooled {
		p.mu.Unlock()
		go w.discard()
		return
	}
	p.ready = append(p.ready, w)
	p.armTrim()
	p.mu.Unlock()
}

// fill starts a shim in the background unless one is idle or starting.
func (p *warmPool) fill() {
	p.mu.Lock()
	if p.closed || len(p.ready) > 0 || p.filling != nil {
		p.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	p.filling = ch
	p.fills.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.fills.Done()
		w, err := p.b.startWarm()
		p.mu.Lock()
		p.filling = nil
		close(ch)
		if err == nil && !p.closed {
			p.ready, w = append(p.ready, w), nil
		}
		p.mu.Unlock()
		if w != nil {
			w.discard()
		}
	}()
}

// close discards the idle shims, after a start in progress has ended (the
// backend closes the files a start passes on once close returns).
func (p *warmPool) close() {
	p.mu.Lock()
	p.closed = true
	if p.trim != nil {
		p.trim.Stop()
	}
	p.mu.Unlock()
	p.fills.Wait()
	p.mu.Lock()
	idle := p.ready
	p.ready = nil
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, w := range idle {
		wg.Go(w.discard)
	}
	wg.Wait()
}

// startPooled gives a run under shimPath to a pooled shim: an idle one,
// else one started now, so that the pool grows to the calls' parallelism
// (maxPooled stay). It returns the shim and the read ends of the run's
// output and status pipes; nil when the run must start the usual way (no
// pool, another shim, a spec it cannot carry, a shim that cannot start).
// A run that could take one calls refillWarm when it ends.
func (b *Backend) startPooled(shimPath string, args, env []string) (*warmShim, *os.File, *shimDiag) {
	if !b.warmFor(shimPath) {
		return nil, nil, nil
	}
	for {
		w, fresh := b.warm.take(), false
		if w == nil {
			var err error
			if w, err = b.startWarm(); err != nil {
				return nil, nil, nil
			}
			fresh = true
		}
		if !fresh && w.limitsChanged() {
			// A command (of a call in parallel) lowered its limits while
			// it was idle: the next command would inherit them.
			go w.discard()
			continue
		}
		out, d, err := w.start(args, env)
		switch {
		case err == nil:
			return w, out, d
		case errors.Is(err, errSpecNUL):
			b.warm.put(w) // the usual start fails the same way
			return nil, nil, nil
		}
		// It died while idle (a command of the sandbox may kill it).
		go w.discard()
		if fresh {
			return nil, nil, nil
		}
	}
}

func (b *Backend) warmFor(shimPath string) bool {
	return b.warm != nil && shimPath != "" && shimPath == b.shim
}

// refillWarm starts the next shim for runs under shimPath when none is
// idle.
func (b *Backend) refillWarm(shimPath string) {
	if b.warmFor(shimPath) {
		b.warm.fill()
	}
}

// startWarm starts a shim that waits for its runs. Its environment is the
// backend's (each run's spec replaces it before anything runs), its
// working directory this process's (a relative Dir resolves as it would
// here); its own stdout and stderr are /dev/null (each run brings its own).
func (b *Backend) startWarm() (*warmShim, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "runs"), os.NewFile(uintptr(fds[1]), "runs")
	var extra []*os.File
	if b.bg != nil {
		extra = append(extra, b.bg.lifeline) // fd 3, as --lifeline 3 says
	}
	extra = append(extra, theirs)
	cmd := exec.Command(b.shim, "__shim", "run", "--runs", strconv.Itoa(2+len(extra)))
	cmd.ExtraFiles = extra
	cmd.Env = b.env[:len(b.env):len(b.env)]
	if shimEnvExtra != "" && !hasKey(cmd.Env, "GORACE") {
		cmd.Env = append(cmd.Env, shimEnvExtra)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = startOwn(cmd)
	theirs.Close()
	if err != nil {
		ours.Close()
		return nil, err
	}
	w := &warmShim{cmd: cmd, ctl: ours, waitCh: make(chan error, 1)}
	go func() { w.waitCh <- waitOwn(cmd) }()
	return w, nil
}

// start gives w a run: the shim's arguments (after `__shim run`) and the
// command's environment, with the run's output pipe and status pipe, whose
// read ends it returns. An error means w is unusable (it died).
func (w *warmShim) start(args, env []string) (out *os.File, diag *shimDiag, err error) {
	var spec bytes.Buffer
	spec.Write([]byte{0, 0, 0, 0}) // the length, below
	spec.WriteString(strconv.Itoa(len(args)))
	spec.WriteByte(0)
	for _, s := range [][]string{args, env} {
		for _, v := range s {
			if bytes.IndexByte([]byte(v), 0) >= 0 {
				return nil, nil, errSpecNUL
			}
			spec.WriteString(v)
			spec.WriteByte(0)
		}
	}
	msg := spec.Bytes()
	binary.BigEndian.PutUint32(msg, uint32(len(msg)-4))

	pr, pw, diag, err := outputPipes(true)
	if err != nil {
		return nil, nil, err
	}
	// The header carries the two files; the rest follows as a stream.
	err = sendRights(w.ctl, msg[:4], int(pw.Fd()), int(diag.w.Fd()))
	if err == nil {
		_, err = w.ctl.Write(msg[4:])
	}
	pw.Close()
	diag.started()
	if err != nil {
		pr.Close()
		diag.wait()
		return nil, nil, err
	}
	return pr, diag, nil
}

// sendRights sends p with the files fds attached, retrying on EINTR.
func sendRights(f *os.File, p []byte, fds ...int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Write(func(fd uintptr) bool {
		for {
			serr = unix.Sendmsg(int(fd), p, unix.UnixRights(fds...), nil, 0)
			if serr != unix.EINTR {
				return serr != unix.EAGAIN
			}
		}
	}); err != nil {
		return err
	}
	return serr
}

// limitsChanged reports whether w's resource limits differ from this
// process's, which it inherited: 16 prlimit calls, microseconds. A shim
// checks its own after each run (it started a Go runtime, which raises its
// soft limit of open files: that one is not compared here). A command
// that changes them between this check and its run's start affects that
// run only: the shim sees the change when the run ends.
func (w *warmShim) limitsChanged() bool {
	return OwnLimits().changed(ProcessLimits(w.cmd.Process.Pid), true) != ""
}

// discard ends a shim that will not run anything more: end of its input
// makes it exit; a kill follows if it does not.
func (w *warmShim) discard() {
	w.ctl.Close()
	select {
	case <-w.waitCh:
	case <-time.After(time.Second):
		_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
		<-w.waitCh
	}
}
