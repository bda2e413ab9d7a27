package loop_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/loop/looptest"
)

// BenchmarkRunBatch measures the pipeline's own cost per call (lookup,
// coercion, validation, hooks, events) with a tool that does nothing.
func BenchmarkRunBatch(b *testing.B) {
	l, err := loop.New([]loop.Tool{readTool()}, loop.WithBeforeToolCall(func(context.Context, *loop.Call) (*loop.Block, error) { return nil, nil }))
	if err != nil {
		b.Fatal(err)
	}
	calls := []loop.ToolCall{call("c1", "read", `{"path":"a.txt","offset":"10","limit":20}`)}
	emit := func(ev loop.Event) { loop.MarshalNoEscape(ev) }
	b.ReportAllocs()
	for b.Loop() {
		l.RunBatch(context.Background(), nil, calls, emit)
	}
}

// BenchmarkParallel8 runs batches of eight concurrent calls.
func BenchmarkParallel8(b *testing.B) {
	l, _ := loop.New([]loop.Tool{looptest.Echo()})
	calls := make([]loop.ToolCall, 8)
	for i := range calls {
		calls[i] = loop.ToolCall{ID: string(rune('a' + i)), Name: "echo", Arguments: json.RawMessage(`{"text":"x"}`)}
	}
	b.ReportAllocs()
	for b.Loop() {
		l.RunBatch(context.Background(), nil, calls, nil)
	}
}
