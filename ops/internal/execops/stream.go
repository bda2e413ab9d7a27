package execops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/shellproc"
)

// streamBody is a streaming call's script body: the prelude and $p.
func streamBody(name, body string) string {
	return prelude + "p=" + shellproc.Quote(name) + "\n" + body
}

// Open streams name with cat. It returns once the script has passed its
// checks, so a missing file or a directory fails here, not in Read. When
// ctx ends or the reader is closed before the end, the script is killed in
// the target (cat of a FIFO without a writer would block there for good).
//
// A stream lost part way (the transport dropped it, no status came) is
// resumed where the reader got to, up to maxResumes times, by a script that
// first checks the file is the one the read began on (device, inode, size,
// modification and change times): a read through a flaky connection ends
// whole or fails, never mixes two versions.
func (o *Ops) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	if err := validPath("open", name); err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	// The streams are copied separately, so data can overtake the ready
	// marker: the first data counts as ready too (and must, since the copy
	// blocks on the pipe until Open's caller reads).
	fw := &firstWriter{w: pw, first: make(chan struct{})}
	c, err := o.startScript(ctx, false, streamBody(name, `if [ -d "$p" ]; then e EISDIR; return; fi
if [ ! -e "$p" ]; then stat -L -c %f -- "$p" >/dev/null || return; e ENOENT; return; fi
if [ ! -r "$p" ]; then e EACCES; return; fi
echo "`+idPrefix+`$(`+identity+`)" >&2
echo `+readyMarker+` >&2
cat -- "$p"`), nil, false, fw)
	if err != nil {
		return nil, err
	}
	rd := &execReader{pr: pr, cur: c}
	rd.stop = context.AfterFunc(ctx, func() { rd.current().abort() })
	go o.follow(ctx, name, rd, pw, fw)
	select {
	case <-c.ew.ready:
		return rd, nil
	case <-fw.first:
		return rd, nil
	case <-c.p.Done():
	case <-ctx.Done():
		rd.stop()
		c.abort()
		pr.Close()
		return nil, ctx.Err()
	}
	// Ended: a failed check, unless it got past the marker.
	select {
	case <-c.ew.ready:
		return rd, nil
	case <-fw.first:
		return rd, nil
	default:
	}
	rd.stop()
	code, stderr, ok := c.ew.result()
	pr.Close()
	if !ok {
		return nil, o.lost(errors.New("open ended without a status"))
	}
	if code == 0 {
		return nil, &fs.PathError{Op: "open", Path: name, Err: o.errorf("no data and no error")}
	}
	return nil, o.readErr(name, stderr)
}

const (
	// idPrefix marks the stderr line with the identity of the file a read
	// streams.
	idPrefix = "pi-sandbox-id "
	// identity prints it: device, inode, size, modification and change
	// times.
	identity = `stat -L -c '%d:%i:%s:%Y:%Z' -- "$p" 2>/dev/null`
	// maxResumes bounds the resumptions of one read.
	maxResumes = 3
	// changedCode is the status of a resumption that found another file.
	changedCode = 97
)

// follow ends the reader with EOF or the script's error once the stream
// ends, resuming a lost stream (see Open).
func (o *Ops) follow(ctx context.Context, name string, rd *execReader, pw *io.PipeWriter, fw *firstWriter) {
	id := ""
	for resumes := 0; ; resumes++ {
		c := rd.current()
		<-c.p.Done()
		if resumes == 0 {
			id = c.ew.line(idPrefix)
		}
		code, stderr, ok := c.ew.result()
		switch {
		case ok && code == 0:
			pw.Close()
			return
		case ok && resumes > 0 && code == changedCode:
			pw.CloseWithError(o.lost(errors.New("read cut part way, and the file changed since: not resumed")))
			return
		case ok:
			pw.CloseWithError(o.readErr(name, stderr))
			return
		case c.wasAborted() && ctx.Err() != nil:
			pw.CloseWithError(context.Cause(ctx))
			return
		}
		why := errors.New("read ended without a status")
		if err := c.p.Err(); err != nil {
			why = fmt.Errorf("read ended without a status (the stream: %w)", err)
		}
		if resumes >= maxResumes || id == "" || ctx.Err() != nil || c.wasAborted() || rd.isClosed() || o.stopped() {
			pw.CloseWithError(o.lost(why))
			return
		}
		// The reader has every byte fw passed on: go on from there.
		off := strconv.FormatInt(fw.written()+1, 10)
		nc, err := o.startScript(ctx, false, streamBody(name, `[ "$(`+identity+`)" = `+shellproc.Quote(id)+` ] || return `+strconv.Itoa(changedCode)+`
tail -c +`+off+` -- "$p"`), nil, false, fw)
		if err != nil {
			pw.CloseWithError(o.lost(fmt.Errorf("%w; resuming: %w", why, err)))
			return
		}
		if !rd.setCurrent(nc) {
			nc.abort()
			pw.CloseWithError(o.lost(why))
			return
		}
	}
}

// readErr maps a failed read; a directory is EISDIR with Op "read", as in
// Node.
func (o *Ops) readErr(name, stderr string) error {
	err := o.pathErr("open", name, stderr)
	if pe, ok := err.(*fs.PathError); ok && ops.ErrnoOf(pe) == ops.EISDIR {
		pe.Op = "read"
	}
	return err
}

type firstWriter struct {
	w     io.Writer
	first chan struct{}
	once  sync.Once
	n     atomic.Int64 // bytes passed on
}

func (f *firstWriter) Write(p []byte) (int, error) {
	f.once.Do(func() { close(f.first) })
	n, err := f.w.Write(p)
	f.n.Add(int64(n))
	return n, err
}

func (f *firstWriter) written() int64 { return f.n.Load() }

// execReader reads what the current script (the first, or a resumption)
// streams.
type execReader struct {
	pr   *io.PipeReader
	stop func() bool

	mu     sync.Mutex
	cur    *call
	closed bool
}

func (r *execReader) Read(b []byte) (int, error) { return r.pr.Read(b) }

func (r *execReader) current() *call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur
}

// setCurrent makes c the script to follow, unless the reader was closed.
func (r *execReader) setCurrent(c *call) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.cur = c
	return true
}

func (r *execReader) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// Close stops the transfer: a script that has not ended is killed.
func (r *execReader) Close() error {
	r.stop()
	r.mu.Lock()
	r.closed = true
	c := r.cur
	r.mu.Unlock()
	r.pr.Close()
	if !c.done() {
		c.abort()
	}
	c.p.Close()
	<-c.p.Done()
	return nil
}

// OpenWriter streams into name with cat through the process's stdin.
func (o *Ops) OpenWriter(ctx context.Context, name string, flag int, perm fs.FileMode) (io.WriteCloser, error) {
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
	c, err := o.startScript(ctx, false, streamBody(name, checks.String()), nil, true, nil)
	if err != nil {
		return nil, err
	}
	select {
	case <-c.ew.ready:
		return &execWriter{o: o, c: c, in: c.p.Stdin(), name: name}, nil
	case <-c.p.Done():
	case <-ctx.Done():
		c.abort()
		return nil, ctx.Err()
	}
	code, stderr, ok := c.ew.result()
	if !ok {
		return nil, o.lost(errors.New("open ended without a status"))
	}
	if code == 0 {
		return nil, &fs.PathError{Op: "open", Path: name, Err: o.errorf("writer ended early")}
	}
	return nil, o.pathErr("open", name, stderr)
}

type execWriter struct {
	o    *Ops
	c    *call
	in   io.WriteCloser
	name string
	once sync.Once
	err  error
}

func (w *execWriter) Write(b []byte) (int, error) {
	n, err := w.in.Write(b)
	if err != nil {
		// The script died (a write error such as ENOSPC ends cat): report
		// its reason rather than the broken connection.
		<-w.c.p.Done()
		if code, stderr, ok := w.c.ew.result(); ok && code != 0 {
			return n, w.o.pathErr("write", w.name, stderr)
		}
		return n, w.o.lost(err)
	}
	return n, nil
}

// Close ends the input and waits for the script: its status says whether
// the data landed.
func (w *execWriter) Close() error {
	w.once.Do(func() {
		w.in.Close()
		<-w.c.p.Done()
		w.c.p.Close()
		code, stderr, ok := w.c.ew.result()
		switch {
		case !ok:
			w.err = w.o.lost(errors.New("write ended without a status"))
		case code != 0:
			w.err = w.o.pathErr("write", w.name, stderr)
		}
	})
	return w.err
}
