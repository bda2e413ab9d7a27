package search

import (
	"bytes"
	"context"
)

// lineWriter is a Cmd.Output that hands each complete line (without "\n")
// to handle as bytes arrive. When handle fails, the error is kept, cancel is
// called (to stop the remote command) and the rest of the output is dropped.
type lineWriter struct {
	buf    []byte
	handle func(line []byte) error
	err    error
	cancel context.CancelFunc
}

func (w *lineWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	for w.err == nil {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		line := w.buf[:i]
		if err := w.handle(line); err != nil {
			w.err = err
			w.cancel()
		}
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) == 0 {
		w.buf = w.buf[:0:0]
	}
	return len(p), nil
}

// flush handles a last line that had no "\n".
func (w *lineWriter) flush() {
	if w.err == nil && len(w.buf) > 0 {
		if err := w.handle(w.buf); err != nil {
			w.err = err
		}
		w.buf = nil
	}
}
