//go:build unix

package native

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// A warm shim is `SHIM __shim run --spec FD`, started before its command is
// known: it blocks reading its run (arguments and environment) from FD. A
// backend that runs many commands (the helper) keeps one ready, so a call
// pays writing the spec instead of the start of a Go program (a few
// milliseconds of exec, page faults and runtime start on a busy host),
// which moves to the gap between calls. The run itself is exactly what a
// shim started for it would do (package shim, spec_linux.go).

// warmShim is one started shim waiting for its run.
type warmShim struct {
	cmd    *exec.Cmd
	spec   *os.File // write end of the spec pipe
	out    *os.File // read end of the output pipe
	diag   *shimDiag
	waitCh chan error
}

// warmPool holds at most one ready shim and refills it after each take.
type warmPool struct {
	b *Backend

	mu      sync.Mutex
	ready   *warmShim
	filling bool
	closed  bool
	fills   sync.WaitGroup // a start in progress (close waits: it uses the backend's files)
}

func newWarmPool(b *Backend) *warmPool {
	p := &warmPool{b: b}
	p.fill()
	return p
}

// take returns the ready shim (nil: none yet; the caller starts one the
// usual way) and starts the next.
func (p *warmPool) take() *warmShim {
	p.mu.Lock()
	w := p.ready
	p.ready = nil
	p.mu.Unlock()
	p.fill()
	return w
}

// fill starts a shim in the background unless one is ready or starting.
func (p *warmPool) fill() {
	p.mu.Lock()
	if p.closed || p.ready != nil || p.filling {
		p.mu.Unlock()
		return
	}
	p.filling = true
	p.fills.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.fills.Done()
		w, err := p.b.startWarm()
		p.mu.Lock()
		p.filling = false
		if err == nil && !p.closed {
			p.ready, w = w, nil
		}
		p.mu.Unlock()
		if w != nil {
			w.discard()
		}
	}()
}

// close discards the ready shim, after a start in progress has ended (the
// backend closes the files a start passes on once close returns).
func (p *warmPool) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.fills.Wait()
	p.mu.Lock()
	w := p.ready
	p.ready = nil
	p.mu.Unlock()
	if w != nil {
		w.discard()
	}
}

// takeWarm returns a ready shim for a run under shimPath, nil when there
// is none (no pool, another shim, none started yet).
func (b *Backend) takeWarm(shimPath string) *warmShim {
	if b.warm == nil || shimPath == "" || shimPath != b.shim {
		return nil
	}
	return b.warm.take()
}

// startWarm starts a shim that waits for its spec. Its environment is the
// backend's (the spec replaces it before anything runs), its working
// directory this process's (a relative Dir resolves as it would here).
func (b *Backend) startWarm() (*warmShim, error) {
	sr, sw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		sr.Close()
		sw.Close()
		return nil, err
	}
	growPipe(pw)
	diag, err := newShimDiag()
	if err != nil {
		sr.Close()
		sw.Close()
		pr.Close()
		pw.Close()
		return nil, err
	}
	var extra []*os.File
	if b.bg != nil {
		extra = append(extra, b.bg.lifeline) // fd 3, as --lifeline 3 says
	}
	extra = append(extra, sr)
	cmd := exec.Command(b.shim, "__shim", "run", "--spec", strconv.Itoa(2+len(extra)))
	cmd.ExtraFiles = extra
	cmd.Env = b.env[:len(b.env):len(b.env)]
	if shimEnvExtra != "" && !hasKey(cmd.Env, "GORACE") {
		cmd.Env = append(cmd.Env, shimEnvExtra)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout, cmd.Stderr = pw, diag.w
	err = cmd.Start()
	sr.Close()
	pw.Close()
	diag.started()
	if err != nil {
		sw.Close()
		pr.Close()
		return nil, err
	}
	w := &warmShim{cmd: cmd, spec: sw, out: pr, diag: diag, waitCh: make(chan error, 1)}
	go func() { w.waitCh <- cmd.Wait() }()
	return w, nil
}

// send gives w its run: the shim's arguments (after `__shim run`) and the
// command's environment. An error means w is unusable (it died).
func (w *warmShim) send(args, env []string) error {
	var buf bytes.Buffer
	buf.WriteString(strconv.Itoa(len(args)))
	buf.WriteByte(0)
	for _, s := range [][]string{args, env} {
		for _, v := range s {
			if bytes.IndexByte([]byte(v), 0) >= 0 {
				return fmt.Errorf("local: NUL in a shim argument")
			}
			buf.WriteString(v)
			buf.WriteByte(0)
		}
	}
	_, err := w.spec.Write(buf.Bytes())
	if cerr := w.spec.Close(); err == nil {
		err = cerr
	}
	return err
}

// discard ends a shim that will not run anything: end of its spec makes
// it exit; a kill follows if it does not.
func (w *warmShim) discard() {
	w.spec.Close()
	select {
	case <-w.waitCh:
	case <-time.After(time.Second):
		_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
		<-w.waitCh
	}
	w.out.Close()
	w.diag.wait()
}
