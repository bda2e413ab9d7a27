package search

import (
	"bytes"
	"context"
	"fmt"
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
	} else if len(w.buf) > maxWireLine && w.err == nil {
		// A line this long is no result line of ours (the shim bounds its
		// lines); holding it could take any amount of memory.
		w.err = fmt.Errorf("search: an output line of the search is over %d MiB (a very long line in a file?); search that file with bash instead", maxWireLine>>20)
		w.buf = nil
		w.cancel()
	}
	return len(p), nil
}

// maxWireLine bounds one line of a search's output in the target: a
// result of the shim's engine is at most maxLineBytes of text, in base64.
const maxWireLine = 16 << 20

// flush handles a last line that had no "\n".
func (w *lineWriter) flush() {
	if w.err == nil && len(w.buf) > 0 {
		if err := w.handle(w.buf); err != nil {
			w.err = err
		}
		w.buf = nil
	}
}
