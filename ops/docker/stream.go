package docker

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/shellproc"
)

// readyMarker is the stderr line a streaming script prints once its checks
// passed and the transfer begins.
const readyMarker = "pi-sandbox-ready"

// stderrWatch collects a script's stderr and signals the ready marker and
// the status line.
type stderrWatch struct {
	mu    sync.Mutex
	buf   strings.Builder
	ready chan struct{}
	once  sync.Once
}

func newStderrWatch() *stderrWatch { return &stderrWatch{ready: make(chan struct{})} }

func (w *stderrWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), readyMarker+"\n") {
		w.once.Do(func() { close(w.ready) })
	}
	return len(p), nil
}

// result returns the status and the stderr text without our markers; ok is
// false when the status line is missing.
func (w *stderrWatch) result() (code int, stderr string, ok bool) {
	w.mu.Lock()
	s := w.buf.String()
	w.mu.Unlock()
	s = strings.Replace(s, readyMarker+"\n", "", 1)
	i := strings.LastIndex(s, rcPrefix)
	if i < 0 {
		return 0, s, false
	}
	code, err := strconv.Atoi(strings.TrimSpace(s[i+len(rcPrefix):]))
	return code, s[:i], err == nil
}

// streamScript wraps body like script does, for the streaming calls.
func streamScript(name, body string) []string {
	return []string{"/bin/sh", "-c", "f() {\n" + prelude + "p=" + shellproc.Quote(name) + "\n" + body +
		"\n}\nf; echo \"" + rcPrefix + "$?\" >&2"}
}

// Open streams name with cat. It returns once the script has passed its
// checks, so a missing file or a directory fails here, not in Read.
func (b *Backend) execOpen(ctx context.Context, name string) (io.ReadCloser, error) {
	if err := validPath("open", name); err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	ew := newStderrWatch()
	// Docker copies stdout and stderr separately, so data can overtake the
	// ready marker: the first data counts as ready too (and must, since the
	// copy blocks on the pipe until Open's caller reads).
	fw := &firstWriter{w: pw, first: make(chan struct{})}
	p, err := b.start(ctx, execSpec{
		argv: streamScript(name, `if [ -d "$p" ]; then e EISDIR; return; fi
if [ ! -e "$p" ]; then stat -L -c %f -- "$p" >/dev/null || return; e ENOENT; return; fi
if [ ! -r "$p" ]; then e EACCES; return; fi
echo `+readyMarker+` >&2
cat -- "$p"`),
		stdout: fw,
		stderr: ew,
	})
	if err != nil {
		return nil, err
	}
	// After the stream ends, the reader sees EOF or the script's error.
	go func() {
		<-p.done
		code, stderr, ok := ew.result()
		switch {
		case ok && code == 0:
			pw.Close()
		case ok:
			pw.CloseWithError(readErr(name, stderr))
		default:
			pw.CloseWithError(b.goneErr(errors.New("read ended without a status")))
		}
	}()
	select {
	case <-ew.ready:
		return &execReader{p: p, pr: pr}, nil
	case <-fw.first:
		return &execReader{p: p, pr: pr}, nil
	case <-p.done:
	case <-ctx.Done():
		p.closeStream()
		pr.Close()
		return nil, ctx.Err()
	}
	// Ended: a failed check, unless it got past the marker.
	select {
	case <-ew.ready:
		return &execReader{p: p, pr: pr}, nil
	case <-fw.first:
		return &execReader{p: p, pr: pr}, nil
	default:
	}
	code, stderr, ok := ew.result()
	pr.Close()
	if !ok {
		return nil, b.goneErr(errors.New("open ended without a status"))
	}
	if code == 0 {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errors.New("docker: no data and no error")}
	}
	return nil, readErr(name, stderr)
}

// readErr maps a failed read; a directory is EISDIR with Op "read", as in
// Node.
func readErr(name, stderr string) error {
	err := pathErr("open", name, stderr)
	if pe, ok := err.(*fs.PathError); ok && ops.ErrnoOf(pe) == ops.EISDIR {
		pe.Op = "read"
	}
	return err
}

type firstWriter struct {
	w     io.Writer
	first chan struct{}
	once  sync.Once
}

func (f *firstWriter) Write(p []byte) (int, error) {
	f.once.Do(func() { close(f.first) })
	return f.w.Write(p)
}

type execReader struct {
	p  *proc
	pr *io.PipeReader
}

func (r *execReader) Read(b []byte) (int, error) { return r.pr.Read(b) }

// Close stops the transfer: cat dies of SIGPIPE when the stream goes.
func (r *execReader) Close() error {
	r.pr.Close()
	r.p.closeStream()
	<-r.p.done
	return nil
}

// OpenWriter streams into name with cat through the exec's stdin.
func (b *Backend) execOpenWriter(ctx context.Context, name string, flag int, perm fs.FileMode) (io.WriteCloser, error) {
	if err := validPath("open", name); err != nil {
		return nil, err
	}
	var checks strings.Builder
	checks.WriteString(`if [ -d "$p" ]; then e EISDIR; return; fi
if [ -e "$p" ]; then
`)
	if flag&os.O_EXCL != 0 && flag&os.O_CREATE != 0 {
		checks.WriteString("e EEXIST; return\n")
	} else {
		checks.WriteString(":\n")
	}
	checks.WriteString("else\n")
	if flag&os.O_CREATE == 0 {
		checks.WriteString(`stat -L -c %f -- "$p" >/dev/null || return; e ENOENT; return` + "\n")
	} else {
		mode := strconv.FormatUint(uint64(perm&fs.ModePerm&^0o022), 8)
		checks.WriteString(`d=${p%/*}; [ -n "$d" ] || d=/
if [ ! -d "$d" ]; then stat -L -c %f -- "$d" >/dev/null || return; e ENOTDIR; return; fi
touch -- "$p" || return
chmod ` + mode + ` -- "$p" || return` + "\n")
	}
	checks.WriteString("fi\n[ -w \"$p\" ] || { e EACCES; return; }\necho " + readyMarker + " >&2\n")
	switch {
	case flag&os.O_APPEND != 0:
		checks.WriteString(`cat >> "$p"`)
	case flag&os.O_TRUNC != 0:
		checks.WriteString(`cat > "$p"`)
	default:
		checks.WriteString(`cat 1<> "$p"`)
	}
	ew := newStderrWatch()
	p, err := b.start(ctx, execSpec{argv: streamScript(name, checks.String()), stdin: true, stderr: ew})
	if err != nil {
		return nil, err
	}
	select {
	case <-ew.ready:
		return &execWriter{b: b, p: p, ew: ew, name: name}, nil
	case <-p.done:
	case <-ctx.Done():
		p.closeStream()
		return nil, ctx.Err()
	}
	code, stderr, ok := ew.result()
	if !ok {
		return nil, b.goneErr(errors.New("open ended without a status"))
	}
	if code == 0 {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errors.New("docker: writer ended early")}
	}
	return nil, pathErr("open", name, stderr)
}

type execWriter struct {
	b    *Backend
	p    *proc
	ew   *stderrWatch
	name string
	once sync.Once
	err  error
}

func (w *execWriter) Write(b []byte) (int, error) {
	n, err := w.p.hj.Conn.Write(b)
	if err != nil {
		// The script died (a write error such as ENOSPC ends cat): report
		// its reason rather than the broken connection.
		<-w.p.done
		if code, stderr, ok := w.ew.result(); ok && code != 0 {
			return n, pathErr("write", w.name, stderr)
		}
		return n, w.b.goneErr(err)
	}
	return n, nil
}

// Close ends the input and waits for the script: its status says whether
// the data landed.
func (w *execWriter) Close() error {
	w.once.Do(func() {
		w.p.closeStdin()
		<-w.p.done
		w.p.closeStream()
		code, stderr, ok := w.ew.result()
		switch {
		case !ok:
			w.err = w.b.goneErr(errors.New("write ended without a status"))
		case code != 0:
			w.err = pathErr("write", w.name, stderr)
		}
	})
	return w.err
}
