package helper

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

// The target is not trusted: every reply the client reads from the helper
// is bounded in size, and a session's start in time, whatever the helper
// sends. A reply over its bound ends the session (the next call starts a
// new helper).
const (
	// MaxReply bounds a JSON reply (hello, roots, ps, kill, end, a file
	// operation, a write's status) and a search reply's line.
	MaxReply = 1 << 20
	// MaxListReply bounds a directory listing's reply (readdir, listdir):
	// some 100,000 entries of ordinary names. Decoding one holds about
	// twice its size.
	MaxListReply = 8 << 20
	// MaxHeaderBytes bounds a reply's header block (HEADERS and its
	// CONTINUATION frames) and header list.
	MaxHeaderBytes = 64 << 10
	// maxSearchLine bounds a line of a search reply (a grep line's text
	// is cut at the query's MaxText, which may be none).
	maxSearchLine = 4 << 20
	// maxFrameSize bounds an HTTP/2 frame of the helper: a command's
	// output frames (up to 256 KiB) cross whole.
	maxFrameSize = 1 << 20
	// DefaultStartTimeout bounds a session's start (the stream setup and
	// the hello) when Config.StartTimeout is zero.
	DefaultStartTimeout = 10 * time.Second
)

// LimitError reports a reply of the helper over its bound. It wraps
// ops.ErrTransport: the session it came on is dropped.
type LimitError struct {
	What  string // "hello reply", "reply header block"
	Limit string // "1 MiB"
	// Malformed: the HTTP/2 client refused the block before it was
	// whole, which it does as well for one over the bound.
	Malformed bool
}

func (e *LimitError) Error() string {
	s := "the helper's " + e.What + " exceeds " + e.Limit
	if e.Malformed {
		s += " or is malformed"
	}
	return s
}

func (e *LimitError) Unwrap() error { return ops.ErrTransport }

// decodeReply decodes one JSON value of at most MaxReply bytes from body
// into out; what names the reply in the LimitError.
func decodeReply(body io.Reader, what string, out any) error {
	return decodeReplyMax(body, what, MaxReply, out)
}

// decodeReplyMax is decodeReply with another bound.
func decodeReplyMax(body io.Reader, what string, max int64, out any) error {
	lr := &io.LimitedReader{R: body, N: max + 1}
	err := json.NewDecoder(lr).Decode(out)
	if err != nil && lr.N <= 0 {
		return &LimitError{What: what, Limit: fmt.Sprintf("%d MiB", max>>20)}
	}
	return err
}

// replyName is what the reply to path is called in errors: "hello reply".
func replyName(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '/' {
			return path[i+1:] + " reply"
		}
	}
	return path + " reply"
}

// startTimeout is how long a session's start may take.
func (c *conn) startTimeout() time.Duration {
	if d := c.cfg.StartTimeout; d > 0 {
		return d
	}
	return DefaultStartTimeout
}

// noHelloError is the cause of a session start that ran out of time.
func (c *conn) noHelloError() error {
	return c.errorf("helper: no hello from the helper within %s: %w", c.startTimeout(), ops.ErrTransport)
}

// limitErr returns the LimitError in err's chain, or nil.
func limitErr(err error) *LimitError {
	var le *LimitError
	if errors.As(err, &le) {
		return le
	}
	return nil
}

// frameWatch follows the HTTP/2 frames the helper sends, so that a frame or
// a header block over its bound ends the stream with an error that names
// the bound (the HTTP/2 client would end it too, with a bare protocol
// error).
type frameWatch struct {
	mu    sync.Mutex
	hdr   [9]byte
	nhdr  int   // bytes of the current frame header seen
	left  int64 // payload bytes of the current frame still to come
	block int64 // bytes of the header block in progress
	open  bool  // a header block has begun and not ended
	err   *LimitError
}

// HTTP/2 frame types and the flag that ends a header block.
const (
	frameHeaders      = 0x1
	framePushPromise  = 0x5
	frameContinuation = 0x9
	flagEndHeaders    = 0x4
)

// see follows p, the next bytes from the helper.
func (w *frameWatch) see(p []byte) *LimitError {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(p) > 0 && w.err == nil {
		if w.left > 0 {
			n := min(int64(len(p)), w.left)
			w.left -= n
			p = p[n:]
			continue
		}
		n := copy(w.hdr[w.nhdr:], p)
		w.nhdr += n
		p = p[n:]
		if w.nhdr < len(w.hdr) {
			break
		}
		w.nhdr = 0
		length := int64(w.hdr[0])<<16 | int64(w.hdr[1])<<8 | int64(w.hdr[2])
		kind, flags := w.hdr[3], w.hdr[4]
		if length > maxFrameSize {
			w.err = &LimitError{What: fmt.Sprintf("HTTP/2 frame (%d bytes)", length), Limit: "1 MiB"}
			break
		}
		switch kind {
		case frameHeaders, framePushPromise:
			w.block, w.open = length, true
		case frameContinuation:
			w.block += length
		}
		if (kind == frameHeaders || kind == framePushPromise || kind == frameContinuation) && w.block > MaxHeaderBytes {
			w.err = &LimitError{What: "reply header block", Limit: "64 KiB"}
			break
		}
		if flags&flagEndHeaders != 0 {
			w.block, w.open = 0, false
		}
		w.left = length
	}
	return w.err
}

// failed returns the bound the helper broke, or nil.
func (w *frameWatch) failed() *LimitError {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// inHeaders reports whether a header block is in progress: a connection
// that failed then failed on it.
func (w *frameWatch) inHeaders() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.open
}

// clipText bounds an error text that came from the target.
func clipText(s string) string { return proto.ClipText(s) }
