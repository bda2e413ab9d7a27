package helper

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
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
// sandbox's helper key (RelayArgs, RelayHello).
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
		if _, err := RelayHello(ctx, s, key); err != nil {
			s.Close()
			return nil, err
		}
		return s, nil
	}
}

// RelayArgs returns the arguments after the shim's path that start the
// relay to the helper daemon in dir; with a key (the sandbox's helper key,
// kept where the sandbox's commands cannot read it, e.g. a container
// label), the stream must start with RelayHello, and the relay accepts
// only a daemon that proves the key (one that cannot is replaced). The
// relay must be the exec's own process, never started by a shell that held
// the exec's stdin first: that shell's descriptors were open to the user.
func RelayArgs(dir, key string) []string {
	if key == "" {
		return []string{"__shim", "relay", dir}
	}
	return []string{"__shim", "relay", "--key-stdin", dir}
}

// relayHelloWait bounds the wait for a keyed relay's first line.
const relayHelloWait = 10 * time.Second

// RelayHello does the key handshake on a fresh stream to a relay started
// with a key: it reads the relay's first line (at most 512 bytes, so a runtime's error in its place
// is shown whole, within
// relayHelloWait and ctx) and answers with the key when the relay says it
// is sealed — never dumpable since its exec, so no other process of the
// sandbox user could ever open its descriptors — else with "-": an exposed
// relay gets no key, and the daemon it reaches is not authenticated
// (sealed is false). A stream that fails the handshake is closed.
func RelayHello(ctx context.Context, rw io.ReadWriteCloser, key string) (sealed bool, err error) {
	type result struct {
		line string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		var line []byte
		var b [1]byte
		for len(line) < 512 {
			if _, err := rw.Read(b[:]); err != nil {
				got <- result{string(line), err}
				return
			}
			if b[0] == '\n' {
				got <- result{string(line), nil}
				return
			}
			line = append(line, b[0])
		}
		got <- result{string(line) + "…", errors.New("not the relay's hello (line too long)")}
	}()
	t := time.NewTimer(relayHelloWait)
	defer t.Stop()
	var r result
	select {
	case r = <-got:
	case <-ctx.Done():
		rw.Close()
		return false, fmt.Errorf("helper: relay handshake: %w", context.Cause(ctx))
	case <-t.C:
		rw.Close()
		return false, fmt.Errorf("helper: the relay said nothing within %s", relayHelloWait)
	}
	if r.err != nil {
		rw.Close()
		return false, fmt.Errorf("helper: relay handshake (after %q): %w", r.line, r.err)
	}
	answer := "-"
	switch r.line {
	case relayMagic + " sealed":
		sealed, answer = true, key
	case relayMagic + " exposed":
	default:
		rw.Close()
		return false, fmt.Errorf("helper: the relay's first line is %q, want %q", r.line, relayMagic+" sealed")
	}
	if _, err := io.WriteString(rw, answer+"\n"); err != nil {
		rw.Close()
		return false, fmt.Errorf("helper: relay key: %w", err)
	}
	return sealed, nil
}

// relayMagic starts a keyed relay's first line (ops/shim's relay).
const relayMagic = "pi-sandbox-relay"

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

// MaxProbeOutput bounds what a probe script prints before the line that
// ends its output (a few lines of facts about the target).
const MaxProbeOutput = 64 << 10

// ErrProbeOutput is ReadProbe's error for an output past MaxProbeOutput.
var ErrProbeOutput = errors.New("helper: the probe's output exceeds 64 KiB")

// ReadProbe reads a probe script's output lines from r up to the line that
// ends them: ServeMarker (serving is true: what r holds next is the
// helper's stream) or ProbeDoneMarker. Output that ends before either, or
// runs past MaxProbeOutput, is an error; out then holds what came before
// the end (the reason a target printed, such as an engine's refusal of the
// exec's user).
func ReadProbe(r *bufio.Reader) (out []byte, serving bool, err error) {
	var line []byte
	for {
		frag, err := r.ReadSlice('\n')
		line = append(line, frag...)
		if len(out)+len(line) > MaxProbeOutput {
			return nil, false, ErrProbeOutput
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			return append(out, line...), false, err
		}
		switch string(line[:len(line)-1]) {
		case ServeMarker:
			return out, true, nil
		case ProbeDoneMarker:
			return out, false, nil
		}
		out = append(out, line...)
		line = line[:0]
	}
}
