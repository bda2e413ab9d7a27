package helper

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
)

// ExecDial returns a Dial that starts `exe __shim serve` as a child process
// of this one, with env as its environment (nil: this process's), and talks
// to it over pipes. The child gets SIGKILL when this process dies
// (Pdeathsig), besides the EOF on its stdin.
func ExecDial(exe string, env []string) func(ctx context.Context) (io.ReadWriteCloser, error) {
	return execDial(exe, env, "__shim", "serve")
}

// RelayDial is ExecDial for `exe __shim relay DIR`: the stream reaches the
// long-lived helper daemon listening in DIR (started by the first relay),
// which keeps background processes when the stream ends; closing the stream
// kills only this client's calls in flight. A non-empty key is the
// sandbox's helper key (RelayArgs).
func RelayDial(exe string, env []string, dir, key string) func(ctx context.Context) (io.ReadWriteCloser, error) {
	dial := execDial(exe, env, RelayArgs(dir, key)...)
	if key == "" {
		return dial
	}
	return func(ctx context.Context) (io.ReadWriteCloser, error) {
		s, err := dial(ctx)
		if err != nil {
			return nil, err
		}
		if err := WriteRelayKey(s, key); err != nil {
			s.Close()
			return nil, err
		}
		return s, nil
	}
}

// RelayArgs returns the arguments after the shim's path that start the
// relay to the helper daemon in dir; with a key (the sandbox's helper key,
// kept where the sandbox's commands cannot read it, e.g. a container
// label), the stream must start with WriteRelayKey and the relay accepts
// only a daemon that proves the key (one that cannot is replaced).
func RelayArgs(dir, key string) []string {
	if key == "" {
		return []string{"__shim", "relay", dir}
	}
	return []string{"__shim", "relay", "--key-stdin", dir}
}

// WriteRelayKey writes the key line a relay started with a key reads first.
func WriteRelayKey(w io.Writer, key string) error {
	if _, err := io.WriteString(w, key+"\n"); err != nil {
		return fmt.Errorf("helper: relay key: %w", err)
	}
	return nil
}

func execDial(exe string, env []string, args ...string) func(ctx context.Context) (io.ReadWriteCloser, error) {
	return func(ctx context.Context) (io.ReadWriteCloser, error) {
		cmd := exec.Command(exe, args...)
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

// The lines that end a probe's output (see ReadProbe).
const (
	// ServeMarker: the exec or session goes on as the helper.
	ServeMarker = "pi-sandbox-serve"
	// ProbeDoneMarker: it does not (the shim is not there yet).
	ProbeDoneMarker = "pi-sandbox-probe-done"
)

// ReadProbe reads a probe script's output lines from r up to the line that
// ends them: ServeMarker (serving is true: what r holds next is the
// helper's stream) or ProbeDoneMarker. Output that ends before either is
// an error.
func ReadProbe(r *bufio.Reader) (out []byte, serving bool, err error) {
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, false, err
		}
		switch strings.TrimSuffix(line, "\n") {
		case ServeMarker:
			return out, true, nil
		case ProbeDoneMarker:
			return out, false, nil
		}
		out = append(out, line...)
	}
}
