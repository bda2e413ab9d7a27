package loop_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/loop/looptest"
)

func script(t *testing.T, lines ...string) *loop.Script {
	t.Helper()
	s, err := loop.ReadScript(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRunEventSequence(t *testing.T) {
	l := newLoop(t, []loop.Tool{looptest.Echo()})
	s := script(t,
		`{"content":[{"type":"text","text":"calling"},{"type":"toolCall","id":"c1","name":"echo","arguments":{"text":"hi"}}],"stopReason":"toolUse"}`,
		``,
		`{"content":[{"type":"text","text":"done"}],"stopReason":"stop"}`,
		`{"content":[{"type":"text","text":"never requested"}],"stopReason":"stop"}`,
	)
	rec := &recorder{}
	msgs := l.Run(context.Background(), s, loop.RunOptions{Prompts: []loop.Message{loop.UserText("go")}}, rec.emit)
	equalLines(t, rec.summary(), []string{
		"agent_start", "turn_start", "message_start user", "message_end user",
		"message_start assistant", "message_update", "message_update", "message_end assistant",
		"tool_execution_start c1", "tool_execution_end c1", "message_start c1", "message_end c1",
		"turn_end",
		"turn_start", "message_start assistant", "message_update", "message_end assistant", "turn_end",
		"agent_end",
	})
	if len(msgs) != 4 { // prompt, assistant, tool result, assistant
		t.Errorf("%d messages", len(msgs))
	}
	last := rec.lines[len(rec.lines)-1]
	if !strings.HasPrefix(last, `{"type":"agent_end","messages":[{"role":"user","content":[{"type":"text","text":"go"}]},{"role":"assistant","content":[{"type":"text","text":"calling"},{"type":"toolCall","id":"c1","name":"echo","arguments":{"text":"hi"}}],"stopReason":"toolUse"},{"role":"toolResult"`) {
		t.Errorf("agent_end: %s", last)
	}
	te := rec.lines[12]
	if !strings.HasPrefix(te, `{"type":"turn_end","message":{"role":"assistant"`) || !strings.Contains(te, `"toolResults":[{"role":"toolResult","toolCallId":"c1"`) {
		t.Errorf("turn_end: %s", te)
	}
}

func TestRunScriptRunsOut(t *testing.T) {
	l := newLoop(t, []loop.Tool{looptest.Echo()})
	s := script(t, `{"content":[{"type":"toolCall","id":"c1","name":"echo","arguments":{"text":"x"}}]}`)
	rec := &recorder{}
	msgs := l.Run(context.Background(), s, loop.RunOptions{}, rec.emit)
	last := msgs[len(msgs)-1].(*loop.AssistantMessage)
	if last.StopReason != loop.StopStop || len(last.Content) != 0 {
		t.Errorf("final message %+v", last)
	}
	if got := rec.summary(); got[len(got)-1] != "agent_end" || got[len(got)-2] != "turn_end" {
		t.Errorf("events %v", got)
	}
}

func TestRunErrorStops(t *testing.T) {
	var ran bool
	echo := looptest.Echo()
	echo.Fn = func(context.Context, string, map[string]any, loop.UpdateFunc) (*loop.Result, error) {
		ran = true
		return nil, nil
	}
	l := newLoop(t, []loop.Tool{echo})
	s := script(t, `{"content":[{"type":"toolCall","id":"c1","name":"echo","arguments":{"text":"x"}}],"stopReason":"error","errorMessage":"overloaded"}`)
	rec := &recorder{}
	l.Run(context.Background(), s, loop.RunOptions{}, rec.emit)
	equalLines(t, rec.summary(), []string{"agent_start", "turn_start", "message_start assistant", "message_update", "message_end assistant", "turn_end", "agent_end"})
	if ran {
		t.Error("a tool of an error message ran")
	}
	if !strings.Contains(rec.lines[5], `"toolResults":[]`) {
		t.Errorf("turn_end: %s", rec.lines[5])
	}
}

func TestRunLengthContinues(t *testing.T) {
	l := newLoop(t, []loop.Tool{looptest.Echo()})
	s := script(t,
		`{"content":[{"type":"toolCall","id":"c1","name":"echo","arguments":{"text":"x"}}],"stopReason":"length"}`,
		`{"content":[{"type":"text","text":"ok"}],"stopReason":"stop"}`)
	msgs := l.Run(context.Background(), s, loop.RunOptions{}, nil)
	tr := msgs[1].(*loop.ToolResultMessage)
	if !tr.IsError() || !strings.HasPrefix(resultText(tr.Result), `Tool call "echo" was not executed`) {
		t.Errorf("length result %q", resultText(tr.Result))
	}
	if got := msgs[2].(*loop.AssistantMessage); got.Content[0].Text != "ok" {
		t.Errorf("no further request after length: %+v", got)
	}
}

func TestRunTerminateStops(t *testing.T) {
	l := newLoop(t, []loop.Tool{looptest.Echo()}, loop.WithBeforeToolCall(func(context.Context, *loop.Call) (*loop.Block, error) {
		return &loop.Block{Reason: "no", Terminate: true}, nil
	}))
	s := script(t,
		`{"content":[{"type":"toolCall","id":"c1","name":"echo","arguments":{"text":"x"}}]}`,
		`{"content":[{"type":"text","text":"not requested"}]}`)
	msgs := l.Run(context.Background(), s, loop.RunOptions{}, nil)
	if len(msgs) != 2 {
		t.Errorf("%d messages after a terminating batch, want 2", len(msgs))
	}
}

func TestRunSteeringAndFollowUp(t *testing.T) {
	l := newLoop(t, []loop.Tool{looptest.Echo()})
	s := script(t,
		`{"content":[{"type":"toolCall","id":"c1","name":"echo","arguments":{"text":"a"}},{"type":"toolCall","id":"c2","name":"echo","arguments":{"text":"b"}}]}`,
		`{"content":[{"type":"text","text":"after steering"}]}`,
		`{"content":[{"type":"text","text":"after follow-up"}]}`)
	steer := &loop.Queue{}
	follow := &loop.Queue{Mode: loop.All}
	polls := 0
	opts := loop.RunOptions{
		Steering: func() []loop.Message {
			polls++
			if polls == 2 { // after the first turn's batch
				steer.Push(loop.UserText("steer"))
			}
			return steer.Drain()
		},
		FollowUp: follow.Drain,
	}
	follow.Push(loop.UserText("follow 1"), loop.UserText("follow 2"))
	msgs := l.Run(context.Background(), s, opts, nil)
	var roles []string
	for _, m := range msgs {
		r := m.Role()
		if u, ok := m.(*loop.UserMessage); ok {
			r += ":" + u.Content[0].Text
		}
		roles = append(roles, r)
	}
	// Steering never skips tool calls: it comes after both results.
	equalLines(t, roles, []string{"assistant", "toolResult", "toolResult", "user:steer", "assistant", "user:follow 1", "user:follow 2", "assistant"})
}

func TestRunFinishTurn(t *testing.T) {
	l := newLoop(t, []loop.Tool{looptest.Echo()})
	s := script(t, `{"content":[{"type":"toolCall","id":"c1","name":"echo","arguments":{"text":"a"}}]}`, `{"content":[]}`)
	msgs := l.Run(context.Background(), s, loop.RunOptions{FinishTurn: func(context.Context, *loop.AssistantMessage, []*loop.ToolResultMessage) loop.TurnAction {
		return loop.TurnStop
	}}, nil)
	if len(msgs) != 2 {
		t.Errorf("%d messages, want 2", len(msgs))
	}
}

type failingProvider struct{ err error }

func (p failingProvider) Stream(ctx context.Context, _ *loop.Request, _ func(*loop.StreamEvent)) (*loop.AssistantMessage, error) {
	return nil, p.err
}

func TestRunAbort(t *testing.T) {
	l := newLoop(t, []loop.Tool{looptest.Echo()})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := &recorder{}
	msgs := l.Run(ctx, failingProvider{errors.New("context canceled")}, loop.RunOptions{}, rec.emit)
	m := msgs[0].(*loop.AssistantMessage)
	if m.StopReason != loop.StopAborted || m.ErrorMessage != "context canceled" {
		t.Errorf("%+v", m)
	}
	equalLines(t, rec.summary(), []string{"agent_start", "turn_start", "message_start assistant", "message_end assistant", "turn_end", "agent_end"})
	// The script provider answers an aborted request with "aborted" too.
	msgs = l.Run(ctx, script(t, `{"content":[]}`), loop.RunOptions{}, nil)
	if m := msgs[0].(*loop.AssistantMessage); m.StopReason != loop.StopAborted {
		t.Errorf("script: %+v", m)
	}
}

func TestReadScriptErrors(t *testing.T) {
	for _, in := range []string{`{"content":[{"type":"video"}]}`, `{"stopReason":"later"}`, `not json`, `{"content":[{"type":"toolCall","id":"x"}]}`} {
		if _, err := loop.ReadScript(strings.NewReader("\n" + in)); err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%s: err %v", in, err)
		}
	}
}
