package loop_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/loop/looptest"
)

func TestBatchEventsJSON(t *testing.T) {
	l := newLoop(t, []loop.Tool{looptest.Echo()})
	var rec recorder
	l.RunBatch(context.Background(), nil, []loop.ToolCall{call("t1", "echo", `{"text":"hi <&>"}`), call("t2", "nope", `{"b":1,"a":2}`)}, rec.emit)
	want := `{"type":"tool_execution_start","toolCallId":"t1","toolName":"echo","args":{"text":"hi <&>"}}
{"type":"tool_execution_start","toolCallId":"t2","toolName":"nope","args":{"b":1,"a":2}}
{"type":"tool_execution_end","toolCallId":"t2","toolName":"nope","result":{"content":[{"type":"text","text":"Tool nope not found"}],"details":{},"isError":true},"isError":true}
{"type":"tool_execution_end","toolCallId":"t1","toolName":"echo","result":{"content":[{"type":"text","text":"hi <&>"}],"details":{"id":"t1"},"isError":false},"isError":false,"durationMs":N}
{"type":"message_start","message":{"role":"toolResult","toolCallId":"t1","toolName":"echo","content":[{"type":"text","text":"hi <&>"}],"details":{"id":"t1"},"isError":false}}
{"type":"message_end","message":{"role":"toolResult","toolCallId":"t1","toolName":"echo","content":[{"type":"text","text":"hi <&>"}],"details":{"id":"t1"},"isError":false,"durationMs":N}}
{"type":"message_start","message":{"role":"toolResult","toolCallId":"t2","toolName":"nope","content":[{"type":"text","text":"Tool nope not found"}],"details":{},"isError":true}}
{"type":"message_end","message":{"role":"toolResult","toolCallId":"t2","toolName":"nope","content":[{"type":"text","text":"Tool nope not found"}],"details":{},"isError":true}}
`
	if got := rec.text(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestParallelOrder: all calls are prepared before any runs; ends come in
// completion order (driven by the test), result messages in source order.
func TestParallelOrder(t *testing.T) {
	var gates looptest.Gates
	started := make(chan string, 3)
	l := newLoop(t, []loop.Tool{looptest.Gate(&gates, started)})
	ended := make(chan string, 3)
	rec := &recorder{onEvent: func(ev loop.Event) {
		if e, ok := ev.(loop.ToolExecutionEnd); ok {
			ended <- e.ToolCallID
		}
	}}
	done := make(chan *loop.Batch)
	go func() {
		done <- l.RunBatch(context.Background(), nil, []loop.ToolCall{
			call("a", "gate", `{"wait":"a"}`), call("b", "gate", `{"wait":"b"}`), call("c", "gate", `{"wait":"c"}`),
		}, rec.emit)
	}()
	for range 3 {
		<-started
	}
	// Every call runs concurrently: all three are waiting now.
	for _, id := range []string{"c", "a", "b"} {
		gates.Open(id)
		if got := <-ended; got != id {
			t.Fatalf("end for %s, want %s", got, id)
		}
	}
	b := <-done
	equalLines(t, rec.summary(), []string{
		"tool_execution_start a", "tool_execution_start b", "tool_execution_start c",
		"tool_execution_end c", "tool_execution_end a", "tool_execution_end b",
		"message_start a", "message_end a", "message_start b", "message_end b", "message_start c", "message_end c",
	})
	for i, id := range []string{"a", "b", "c"} {
		if b.Results[i].ToolCallID != id || b.Results[i].DurationMs == nil {
			t.Errorf("result %d: %s duration %v", i, b.Results[i].ToolCallID, b.Results[i].DurationMs)
		}
	}
}

// TestPrepareBeforeExecute: before hooks of all calls run before any call
// executes.
func TestPrepareBeforeExecute(t *testing.T) {
	var order []string
	var executed atomic.Int32
	echo := looptest.Echo()
	inner := echo.Fn
	echo.Fn = func(ctx context.Context, id string, args map[string]any, u loop.UpdateFunc) (*loop.Result, error) {
		executed.Add(1)
		return inner(ctx, id, args, u)
	}
	l := newLoop(t, []loop.Tool{echo}, loop.WithBeforeToolCall(func(_ context.Context, c *loop.Call) (*loop.Block, error) {
		if executed.Load() != 0 {
			t.Errorf("before hook for %s after an execution", c.ID)
		}
		order = append(order, c.ID)
		return nil, nil
	}))
	l.RunBatch(context.Background(), nil, []loop.ToolCall{call("1", "echo", `{"text":"a"}`), call("2", "echo", `{"text":"b"}`), call("3", "echo", `{"text":"c"}`)}, nil)
	if len(order) != 3 || order[0] != "1" || order[2] != "3" {
		t.Errorf("before order %v", order)
	}
}

func TestSequentialBatch(t *testing.T) {
	var gates looptest.Gates
	started := make(chan string, 3)
	l := newLoop(t, []loop.Tool{looptest.Seq(), looptest.Gate(&gates, started)})
	rec := &recorder{}
	done := make(chan *loop.Batch)
	go func() {
		done <- l.RunBatch(context.Background(), nil, []loop.ToolCall{
			call("g", "gate", `{"wait":"g"}`), call("s", "seq", `{"text":"x"}`), call("u", "nope", `{}`),
		}, rec.emit)
	}()
	<-started
	// While g runs, nothing of the later calls has happened.
	equalLines(t, rec.summary(), []string{"tool_execution_start g"})
	gates.Open("g")
	<-done
	equalLines(t, rec.summary(), []string{
		"tool_execution_start g", "tool_execution_end g", "message_start g", "message_end g",
		"tool_execution_start s", "tool_execution_end s", "message_start s", "message_end s",
		"tool_execution_start u", "tool_execution_end u", "message_start u", "message_end u",
	})
	// WithSequential does the same without a sequential tool.
	l = newLoop(t, []loop.Tool{looptest.Echo()}, loop.WithSequential())
	rec = &recorder{}
	l.RunBatch(context.Background(), nil, []loop.ToolCall{call("1", "echo", `{"text":"a"}`), call("2", "echo", `{"text":"b"}`)}, rec.emit)
	equalLines(t, rec.summary()[:4], []string{"tool_execution_start 1", "tool_execution_end 1", "message_start 1", "message_end 1"})
}

func TestBeforeHook(t *testing.T) {
	var ran atomic.Int32
	echo := looptest.Echo()
	inner := echo.Fn
	echo.Fn = func(ctx context.Context, id string, args map[string]any, u loop.UpdateFunc) (*loop.Result, error) {
		ran.Add(1)
		return inner(ctx, id, args, u)
	}
	var calls []string
	l := newLoop(t, []loop.Tool{echo},
		loop.WithBeforeToolCall(func(_ context.Context, c *loop.Call) (*loop.Block, error) {
			calls = append(calls, "first "+c.ID)
			switch c.Args["text"] {
			case "deny":
				return &loop.Block{Reason: "command denied by policy"}, nil
			case "stop":
				return &loop.Block{Terminate: true}, nil
			case "boom":
				return nil, errors.New("hook exploded")
			case "rewrite":
				c.Args["text"] = "rewritten"
			}
			return nil, nil
		}),
		loop.WithBeforeToolCall(func(_ context.Context, c *loop.Call) (*loop.Block, error) {
			calls = append(calls, "second "+c.ID)
			return nil, nil
		}))
	b := l.RunBatch(context.Background(), nil, []loop.ToolCall{
		call("1", "echo", `{"text":"deny"}`), call("2", "echo", `{"text":"stop"}`),
		call("3", "echo", `{"text":"boom"}`), call("4", "echo", `{"text":"rewrite"}`),
	}, nil)
	want := []struct {
		text      string
		isErr     bool
		terminate bool
		executed  bool
	}{
		{"command denied by policy", true, false, false},
		{"Tool execution was blocked", true, true, false},
		{"hook exploded", true, false, false},
		{"rewritten", false, false, true},
	}
	for i, w := range want {
		r := b.Results[i]
		if resultText(r.Result) != w.text || r.Result.IsError != w.isErr || r.Result.Terminate != w.terminate || (r.DurationMs != nil) != w.executed {
			t.Errorf("call %d: %q isError=%v terminate=%v duration=%v", i+1, resultText(r.Result), r.Result.IsError, r.Result.Terminate, r.DurationMs)
		}
	}
	if ran.Load() != 1 {
		t.Errorf("tool ran %d times, want 1", ran.Load())
	}
	// A block or an error stops the chain: the second hook sees only call 4.
	equalLines(t, calls, []string{"first 1", "first 2", "first 3", "first 4", "second 4"})
	if b.Terminate {
		t.Error("batch terminated though not every result asked to")
	}
}

func TestAfterHook(t *testing.T) {
	yes, no := true, false
	l := newLoop(t, []loop.Tool{looptest.Echo(), looptest.Fail(nil)},
		loop.WithAfterToolCall(func(_ context.Context, c *loop.Call, r *loop.Result) (*loop.Override, error) {
			switch c.ID {
			case "content":
				return &loop.Override{Content: []loop.Content{loop.Text("[redacted]")}}, nil
			case "details":
				return &loop.Override{Details: map[string]any{"x": 1}, Terminate: &yes}, nil
			case "iserr":
				return &loop.Override{IsError: &no}, nil
			case "throw":
				return nil, errors.New("after failed")
			}
			return nil, nil
		}))
	b := l.RunBatch(context.Background(), nil, []loop.ToolCall{
		call("content", "echo", `{"text":"secret"}`), call("details", "echo", `{"text":"d"}`),
		call("iserr", "fail", `{"message":"bad"}`), call("throw", "echo", `{"text":"t"}`), call("keep", "echo", `{"text":"k"}`),
	}, nil)
	check := func(i int, text, details string, isErr, term bool) {
		t.Helper()
		r := b.Results[i].Result
		d, _ := loop.MarshalNoEscape(r.Details)
		if resultText(r) != text || string(d) != details || r.IsError != isErr || r.Terminate != term {
			t.Errorf("%s: %q %s isError=%v terminate=%v", b.Results[i].ToolCallID, resultText(r), d, r.IsError, r.Terminate)
		}
	}
	check(0, "[redacted]", `{"id":"content"}`, false, false) // details kept
	check(1, "d", `{"x":1}`, false, true)
	check(2, "bad", `{}`, false, false)
	check(3, "after failed", `{}`, true, false)
	check(4, "k", `{"id":"keep"}`, false, false)
}

func TestTerminate(t *testing.T) {
	yes := true
	l := newLoop(t, []loop.Tool{looptest.Echo()}, loop.WithAfterToolCall(func(_ context.Context, c *loop.Call, r *loop.Result) (*loop.Override, error) {
		if c.Args["text"] == "t" {
			return &loop.Override{Terminate: &yes}, nil
		}
		return nil, nil
	}))
	ctx := context.Background()
	if b := l.RunBatch(ctx, nil, []loop.ToolCall{call("1", "echo", `{"text":"t"}`), call("2", "echo", `{"text":"t"}`)}, nil); !b.Terminate {
		t.Error("all terminate: batch did not terminate")
	}
	if b := l.RunBatch(ctx, nil, []loop.ToolCall{call("1", "echo", `{"text":"t"}`), call("2", "echo", `{"text":"x"}`)}, nil); b.Terminate {
		t.Error("one not terminating: batch terminated")
	}
	if b := l.RunBatch(ctx, nil, nil, nil); b.Terminate {
		t.Error("empty batch terminated")
	}
}

func TestLengthBatch(t *testing.T) {
	var hooks, ran atomic.Int32
	echo := looptest.Echo()
	echo.Fn = func(context.Context, string, map[string]any, loop.UpdateFunc) (*loop.Result, error) {
		ran.Add(1)
		return nil, nil
	}
	l := newLoop(t, []loop.Tool{echo}, loop.WithBeforeToolCall(func(context.Context, *loop.Call) (*loop.Block, error) {
		hooks.Add(1)
		return nil, nil
	}))
	rec := &recorder{}
	b := l.RejectBatch([]loop.ToolCall{call("1", "echo", `{"text":"a"}`), call("2", "nope", `{"te`)}, rec.emit)
	equalLines(t, rec.summary(), []string{
		"tool_execution_start 1", "tool_execution_end 1", "message_start 1", "message_end 1",
		"tool_execution_start 2", "tool_execution_end 2", "message_start 2", "message_end 2",
	})
	want := `Tool call "nope" was not executed: the response hit the output token limit, so its arguments may be truncated. Re-issue the tool call with complete arguments.`
	if r := b.Results[1]; resultText(r.Result) != want || !r.Result.IsError || r.DurationMs != nil {
		t.Errorf("got %q isError=%v", resultText(r.Result), r.Result.IsError)
	}
	if hooks.Load() != 0 || ran.Load() != 0 || b.Terminate {
		t.Errorf("hooks %d, ran %d, terminate %v", hooks.Load(), ran.Load(), b.Terminate)
	}
}

func TestAbortParallel(t *testing.T) {
	var gates looptest.Gates
	started := make(chan string, 2)
	l := newLoop(t, []loop.Tool{looptest.Gate(&gates, started), looptest.Echo()})
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan *loop.Batch)
	go func() {
		done <- l.RunBatch(ctx, nil, []loop.ToolCall{call("1", "gate", `{"wait":"never"}`), call("2", "gate", `{"wait":"never"}`)}, nil)
	}()
	<-started
	<-started
	cancel(errors.New("user pressed ctrl-c"))
	b := <-done
	for _, r := range b.Results {
		if resultText(r.Result) != "Operation aborted" || !r.Result.IsError {
			t.Errorf("%s: %q", r.ToolCallID, resultText(r.Result))
		}
	}
}

func TestAbortSequential(t *testing.T) {
	var gates looptest.Gates
	started := make(chan string, 3)
	var hooks atomic.Int32
	l := newLoop(t, []loop.Tool{looptest.Gate(&gates, started), looptest.Seq()}, loop.WithBeforeToolCall(func(context.Context, *loop.Call) (*loop.Block, error) {
		hooks.Add(1)
		return nil, nil
	}))
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("stop")
	rec := &recorder{}
	done := make(chan *loop.Batch)
	go func() {
		done <- l.RunBatch(ctx, nil, []loop.ToolCall{call("1", "gate", `{"wait":"never"}`), call("2", "seq", `{"text":"x"}`), call("3", "gate", `{}`)}, rec.emit)
	}()
	<-started
	cancel(cause)
	b := <-done
	if len(b.Results) != 3 {
		t.Fatalf("%d results", len(b.Results))
	}
	for _, r := range b.Results {
		if resultText(r.Result) != "Operation aborted" {
			t.Errorf("%s: %q", r.ToolCallID, resultText(r.Result))
		}
	}
	if r := b.Results[1]; r.DurationMs != nil || !errors.Is(r.Result.Err, cause) {
		t.Errorf("skipped call: duration %v, err %v", r.DurationMs, r.Result.Err)
	}
	if len(started) != 0 || hooks.Load() != 1 {
		t.Errorf("calls after the abort ran (%d) or were hooked (%d)", len(started), hooks.Load())
	}
	if n := len(rec.summary()); n != 12 {
		t.Errorf("%d events, want 12", n)
	}

	// Already aborted: everything is an immediate "Operation aborted".
	b = l.RunBatch(ctx, nil, []loop.ToolCall{call("a", "gate", `{}`), call("b", "nope", `{}`)}, nil)
	for _, r := range b.Results {
		if resultText(r.Result) != "Operation aborted" || r.DurationMs != nil {
			t.Errorf("%s: %q", r.ToolCallID, resultText(r.Result))
		}
	}
}

func TestUpdates(t *testing.T) {
	var late loop.UpdateFunc
	lateTool := &looptest.Func{ToolName: "late", Fn: func(_ context.Context, _ string, _ map[string]any, u loop.UpdateFunc) (*loop.Result, error) {
		late = u
		u(&loop.Result{}) // pi's first, empty update
		return loop.TextResult("ok", nil), nil
	}}
	l := newLoop(t, []loop.Tool{looptest.Updates(), lateTool})
	rec := &recorder{}
	l.RunBatch(context.Background(), nil, []loop.ToolCall{call("u", "updates", `{"n":"3"}`)}, rec.emit)
	equalLines(t, rec.summary(), []string{
		"tool_execution_start u", "tool_execution_update u", "tool_execution_update u", "tool_execution_update u",
		"tool_execution_end u", "message_start u", "message_end u",
	})
	upd := rec.events[3].(loop.ToolExecutionUpdate)
	if resultText(upd.PartialResult) != "line 1\nline 2\nline 3\n" || string(upd.Args) != `{"n":"3"}` {
		t.Errorf("update: %q args %s", resultText(upd.PartialResult), upd.Args)
	}

	rec = &recorder{}
	l.RunBatch(context.Background(), nil, []loop.ToolCall{call("l", "late", `{}`)}, rec.emit)
	late(loop.TextResult("too late", nil))
	equalLines(t, rec.summary(), []string{"tool_execution_start l", "tool_execution_update l", "tool_execution_end l", "message_start l", "message_end l"})
	if got := rec.lines[1]; got != `{"type":"tool_execution_update","toolCallId":"l","toolName":"late","args":{},"partialResult":{"content":[]}}` {
		t.Errorf("empty update: %s", got)
	}
}

func TestToolErrors(t *testing.T) {
	transport := errors.New("ssh: connection lost")
	panicky := &looptest.Func{ToolName: "panicky", Fn: func(context.Context, string, map[string]any, loop.UpdateFunc) (*loop.Result, error) {
		panic("kaboom")
	}}
	flagged := &looptest.Func{ToolName: "flagged", Fn: func(context.Context, string, map[string]any, loop.UpdateFunc) (*loop.Result, error) {
		return &loop.Result{Content: []loop.Content{loop.Text("exit 1")}, IsError: true}, nil
	}}
	l := newLoop(t, []loop.Tool{looptest.Fail(transport), panicky, flagged})
	b := l.RunBatch(context.Background(), nil, []loop.ToolCall{call("1", "fail", `{}`), call("2", "panicky", `{}`), call("3", "flagged", `{}`)}, nil)
	if r := b.Results[0].Result; !r.IsError || resultText(r) != "ssh: connection lost" || !errors.Is(r.Err, transport) {
		t.Errorf("fail: %q %v", resultText(r), r.Err)
	}
	if r := b.Results[1].Result; !r.IsError || resultText(r) != "kaboom" {
		t.Errorf("panic: %q", resultText(r))
	}
	if r := b.Results[2].Result; !r.IsError || resultText(r) != "exit 1" || r.Err != nil {
		t.Errorf("flagged: %q", resultText(r))
	}
}
