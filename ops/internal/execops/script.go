package execops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops/internal/shellproc"
)

const (
	// rcPrefix marks the status line the scripts print on stderr, which
	// saves a Wait round trip.
	rcPrefix = "pi-sandbox-rc "
	// pidPrefix marks the script's first stderr line: its pid, for the
	// kill of an aborted call.
	pidPrefix = "pi-sandbox-pid "
	// readyMarker is the stderr line a streaming script prints once its
	// checks passed and the transfer begins.
	readyMarker = "pi-sandbox-ready"
	// abortKillWait bounds the kill exec of an aborted call.
	abortKillWait = 5 * time.Second
	// maxScriptOutput bounds what a script prints on stdout (a large
	// directory's listing is the most): the target is not trusted.
	maxScriptOutput = 16 << 20
	// maxStderrHead and maxStderrTail bound what is kept of a script's
	// stderr: its start (the pid line, the messages) and its end (the
	// status line).
	maxStderrHead = 32 << 10
	maxStderrTail = 4 << 10
)

// errOutputBound stops the copy of a script's stdout past
// maxScriptOutput.
var errOutputBound = errors.New("over the bound")

// boundedBuffer is a bytes.Buffer that refuses to grow past max, and then
// closes over. It has no ReadFrom, which would take past the bound.
type boundedBuffer struct {
	buf  bytes.Buffer
	max  int
	over chan struct{}
	once sync.Once
}

func newBoundedBuffer(max int) *boundedBuffer {
	return &boundedBuffer{max: max, over: make(chan struct{})}
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if b.buf.Len()+len(p) > b.max {
		b.once.Do(func() { close(b.over) })
		return 0, errOutputBound
	}
	return b.buf.Write(p)
}

// Result is the outcome of a short script.
type Result struct {
	Stdout []byte
	Stderr string // without the status and pid lines
	Code   int
}

// wrap turns a script body into the argv: the pid line, the body as a
// function (so that "return" works), the status line. token names the call
// in the argv, so that the abort kill can tell the process is still ours.
func wrap(body, token string) []string {
	return []string{"/bin/sh", "-c", "# " + token + "\necho \"" + pidPrefix + "$$\" >&2\nf() {\n" + body + "\n}\nf; echo \"" + rcPrefix + "$?\" >&2"}
}

// call is one started script.
type call struct {
	o     *Ops
	p     Process
	ew    *stderrWatch
	token string
	root  bool

	abortOnce sync.Once
	aborted   chan struct{} // closed when abort began
}

// startScript starts body. stdout receives its stdout.
func (o *Ops) startScript(ctx context.Context, root bool, body string, stdin io.Reader, pipe bool, stdout io.Writer) (*call, error) {
	c := &call{o: o, ew: newStderrWatch(), token: "pi-sandbox-call " + NewCallID(), root: root, aborted: make(chan struct{})}
	p, err := o.cfg.Exec.Start(ctx, Spec{Argv: wrap(body, c.token), Root: root, Stdin: stdin, StdinPipe: pipe, Stdout: stdout, Stderr: c.ew})
	if err != nil {
		return nil, err
	}
	c.p = p
	return c, nil
}

// done reports whether the streams have ended.
func (c *call) done() bool {
	select {
	case <-c.p.Done():
		return true
	default:
		return false
	}
}

// abort ends a call that has not finished: the stream is torn down, then
// a second process kills the script's process group (what it started dies
// with it). The stream goes first: the engine may hold back the kill
// exec's end until the killed process's output is released (seen with
// docker when the first stream was not drained). It returns when both are
// done; later calls return at once.
func (c *call) abort() {
	c.abortOnce.Do(func() {
		close(c.aborted)
		running := !c.done()
		c.p.Close()
		if pid := c.ew.pidOf(); pid > 0 && running {
			ctx, cancel := context.WithTimeout(context.Background(), abortKillWait)
			c.o.runKill(ctx, c.root, killPIDScript(pid, c.token))
			cancel()
		}
	})
}

// wasAborted reports whether abort was called.
func (c *call) wasAborted() bool {
	select {
	case <-c.aborted:
		return true
	default:
		return false
	}
}

// killPIDScript kills the group of pid (a script is a session leader in
// the target), or pid alone, if its command line still holds token: a pid
// reused since is left alone.
func killPIDScript(pid int, token string) string {
	p := strconv.Itoa(pid)
	return "c=$(cat /proc/" + p + "/cmdline 2>/dev/null)\ncase $c in *" + shellproc.Quote(token) + "*) kill -9 -" + p + " 2>/dev/null || kill -9 " + p + " 2>/dev/null;; esac\nexit 0"
}

// closeAfterExit closes the stream when the process has exited but its
// stream has not: under load a docker attach connection was seen to stay
// open after its process exited, which hung the call. Only for callers
// that drain the stream as it arrives, so that closing it loses nothing.
func (c *call) closeAfterExit(ctx context.Context) {
	select {
	case <-c.p.Done():
		return
	case <-ctx.Done():
		return
	case <-time.After(500 * time.Millisecond):
	}
	if _, err := c.p.Wait(ctx); err != nil {
		return
	}
	select {
	case <-c.p.Done():
	case <-ctx.Done():
	case <-time.After(2 * time.Second):
		c.p.Close()
	}
}

// Script runs body with /bin/sh -c as the target's user, feeding stdin
// when not nil, and collects its output. body must not call exit: its last
// status is reported on stderr. When ctx ends first, the script's process
// group is killed.
func (o *Ops) Script(ctx context.Context, body string, stdin io.Reader) (*Result, error) {
	return o.ScriptAs(ctx, false, body, stdin)
}

// ScriptAs is Script, as root when root is set.
func (o *Ops) ScriptAs(ctx context.Context, root bool, body string, stdin io.Reader) (*Result, error) {
	out := newBoundedBuffer(maxScriptOutput)
	c, err := o.startScript(ctx, root, body, stdin, false, out)
	if err != nil {
		return nil, err
	}
	defer c.p.Close()
	stop := context.AfterFunc(ctx, c.abort)
	defer stop()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go c.closeAfterExit(wctx)
	select {
	case <-c.p.Done():
	case <-out.over:
		c.abort()
		return nil, fmt.Errorf("%s: a script's output exceeds 16 MiB", o.cfg.Name)
	}
	if ctx.Err() != nil {
		c.abort()
		return nil, context.Cause(ctx)
	}
	res := &Result{Stdout: out.buf.Bytes()}
	code, stderr, ok := c.ew.result()
	res.Stderr = stderr
	if ok {
		res.Code = code
		return res, nil
	}
	// No status line: the shell died (or the target did).
	code, err = c.p.Wait(ctx)
	if err != nil {
		return nil, err
	}
	if code == 0 {
		return nil, o.lost(errors.New("script ended without its status line"))
	}
	res.Code = code
	return res, nil
}

// stderrWatch collects a script's stderr and picks out the pid line, the
// ready marker and the status line.
type stderrWatch struct {
	mu    sync.Mutex
	buf   strings.Builder // the first maxStderrHead bytes
	tail  []byte          // then the last maxStderrTail bytes
	cut   bool            // bytes between buf and tail were dropped
	pid   int
	ready chan struct{}
	once  sync.Once
}

func newStderrWatch() *stderrWatch { return &stderrWatch{ready: make(chan struct{})} }

func (w *stderrWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	if room := maxStderrHead - w.buf.Len(); room > 0 {
		k := min(room, len(p))
		w.buf.Write(p[:k])
		p = p[k:]
	}
	if len(p) > 0 {
		w.tail = append(w.tail, p...)
		if over := len(w.tail) - maxStderrTail; over > 0 {
			w.tail = append(w.tail[:0], w.tail[over:]...)
			w.cut = true
		}
	}
	s := w.buf.String()
	if w.pid == 0 {
		if rest, ok := strings.CutPrefix(s, pidPrefix); ok {
			if line, _, ok := strings.Cut(rest, "\n"); ok {
				if n, err := strconv.Atoi(line); err == nil {
					w.pid = n
				} else {
					w.pid = -1
				}
			}
		}
	}
	if strings.Contains(s, readyMarker+"\n") {
		w.once.Do(func() { close(w.ready) })
	}
	return n, nil
}

// text is what is kept of stderr.
func (w *stderrWatch) text() string {
	if len(w.tail) == 0 {
		return w.buf.String()
	}
	sep := ""
	if w.cut {
		sep = "\n[...]\n"
	}
	return w.buf.String() + sep + string(w.tail)
}

// line returns the rest of the first line that starts with prefix, or "".
func (w *stderrWatch) line(prefix string) string {
	w.mu.Lock()
	s := w.text()
	w.mu.Unlock()
	for l := range strings.Lines(s) {
		if rest, ok := strings.CutPrefix(l, prefix); ok {
			return strings.TrimSuffix(rest, "\n")
		}
	}
	return ""
}

func (w *stderrWatch) pidOf() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pid
}

// result returns the status and the stderr text without our markers; ok is
// false when the status line is missing.
func (w *stderrWatch) result() (code int, stderr string, ok bool) {
	w.mu.Lock()
	s := w.text()
	w.mu.Unlock()
	if rest, ok := strings.CutPrefix(s, pidPrefix); ok {
		if _, after, ok := strings.Cut(rest, "\n"); ok {
			s = after
		}
	}
	s = strings.Replace(s, readyMarker+"\n", "", 1)
	if i := strings.Index(s, idPrefix); i >= 0 && (i == 0 || s[i-1] == '\n') {
		if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
			s = s[:i] + s[i+j+1:]
		}
	}
	i := strings.LastIndex(s, rcPrefix)
	if i < 0 {
		return 0, s, false
	}
	code, err := strconv.Atoi(strings.TrimSpace(s[i+len(rcPrefix):]))
	return code, s[:i], err == nil
}

// runKill runs a kill script in a process of its own and reports whether
// it ran to its end.
func (o *Ops) runKill(ctx context.Context, root bool, script string) bool {
	kp, err := o.cfg.Exec.Start(ctx, Spec{Root: root, Argv: []string{"/bin/sh", "-c", script}})
	if err != nil {
		return false
	}
	defer kp.Close()
	select {
	case <-kp.Done():
		return true
	case <-ctx.Done():
		return false
	}
}
