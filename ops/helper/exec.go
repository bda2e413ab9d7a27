package helper

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// ExecDial returns a Dial that starts `exe __shim serve` as a child process
// of this one, with env as its environment (nil: this process's), and talks
// to it over pipes. The child gets SIGKILL when this process dies
// (Pdeathsig), besides the EOF on its stdin.
func ExecDial(exe string, env []string) func(ctx context.Context) (io.ReadWriteCloser, error) {
	return func(ctx context.Context) (io.ReadWriteCloser, error) {
		cmd := exec.Command(exe, "__shim", "serve")
		cmd.Env = env
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("helper: start %s: %w", exe, err)
		}
		go cmd.Wait()
		p := &procStream{in: stdin, out: stdout}
		return p, nil
	}
}

// procStream is a child helper's stdio.
type procStream struct {
	in   io.WriteCloser
	out  io.ReadCloser
	once sync.Once
}

func (p *procStream) Read(b []byte) (int, error)  { return p.out.Read(b) }
func (p *procStream) Write(b []byte) (int, error) { return p.in.Write(b) }

// Close closes the child's stdin: its signal to kill every command and
// exit (the goroutine started with it reaps it).
func (p *procStream) Close() error {
	p.once.Do(func() { p.in.Close() })
	return nil
}

// TailBuffer keeps the last bytes written to it: a helper's stderr, for
// the error that says why it would not start.
type TailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

// NewTailBuffer keeps the last max bytes.
func NewTailBuffer(max int) *TailBuffer { return &TailBuffer{max: max} }

func (t *TailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *TailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
