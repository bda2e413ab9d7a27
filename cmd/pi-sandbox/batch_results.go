package main

import (
	"github.com/pi-sandbox/pi-sandbox/loop"
)

// batchResult is `batch --results`' line for one finished call.
type batchResult struct {
	ID     string       `json:"id"`
	Name   string       `json:"name"`
	Result *loop.Result `json:"result"`
}

// emitResult writes a line for each tool_execution_end event (as the call
// finishes) and nothing for the other events.
func (e *eventWriter) emitResult(ev loop.Event) {
	end, ok := ev.(loop.ToolExecutionEnd)
	if !ok || e.err != nil {
		return
	}
	b, err := loop.MarshalNoEscape(batchResult{end.ToolCallID, end.ToolName, end.Result})
	if err != nil {
		e.err = err
		return
	}
	_, e.err = e.w.Write(append(escapeJSONControls(b), '\n'))
}
