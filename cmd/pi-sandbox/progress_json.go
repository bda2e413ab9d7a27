package main

import (
	"io"

	"github.com/pi-sandbox/pi-sandbox/loop"
)

// eventWriter writes events as JSON lines, one write per event so a reader
// sees each as it happens, with no raw control character (see
// escapeJSONControls). The loop never emits concurrently.
type eventWriter struct {
	w   io.Writer
	err error
}

func newEventWriter(w io.Writer) *eventWriter { return &eventWriter{w: w} }

func (e *eventWriter) emit(ev loop.Event) {
	if e.err != nil {
		return
	}
	b, err := loop.MarshalNoEscape(ev)
	if err != nil {
		e.err = err
		return
	}
	_, e.err = e.w.Write(append(escapeJSONControls(b), '\n'))
}
