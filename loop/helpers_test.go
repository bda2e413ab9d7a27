package loop_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/loop/looptest"
)

// recorder keeps every event, and their JSON lines.
type recorder struct {
	mu     sync.Mutex
	events []loop.Event
	lines  []string
	// onEvent, if set, is called (under the loop's emission lock) for each.
	onEvent func(loop.Event)
}

func (r *recorder) emit(ev loop.Event) {
	b, err := loop.MarshalNoEscape(ev)
	if err != nil {
		panic(err)
	}
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.lines = append(r.lines, string(b))
	f := r.onEvent
	r.mu.Unlock()
	if f != nil {
		f(ev)
	}
}

var durationRE = regexp.MustCompile(`"durationMs":\d+`)

// text returns the JSON lines with durations replaced by "durationMs":N.
func (r *recorder) text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return durationRE.ReplaceAllString(strings.Join(r.lines, "\n"), `"durationMs":N`) + "\n"
}

// summary lists "type id" per event (id empty for non-tool events; for
// message events the tool call id of a tool-result message).
func (r *recorder) summary() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, ev := range r.events {
		s := ev.Type()
		switch e := ev.(type) {
		case loop.ToolExecutionStart:
			s += " " + e.ToolCallID
		case loop.ToolExecutionUpdate:
			s += " " + e.ToolCallID
		case loop.ToolExecutionEnd:
			s += " " + e.ToolCallID
		case loop.MessageStart:
			s += " " + msgID(e.Message)
		case loop.MessageEnd:
			s += " " + msgID(e.Message)
		}
		out = append(out, strings.TrimSpace(s))
	}
	return out
}

func msgID(m loop.Message) string {
	switch m := m.(type) {
	case *loop.ToolResultMessage:
		return m.ToolCallID
	default:
		return m.Role()
	}
}

func call(id, name, args string) loop.ToolCall {
	return loop.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
}

func newLoop(t *testing.T, tools []loop.Tool, opts ...loop.Option) *loop.Loop {
	t.Helper()
	l, err := loop.New(tools, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func resultText(r *loop.Result) string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

func equalLines(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n  got  %q\n  want %q", got, want)
	}
}

// readTool and bashTool carry pi's schemas for read and bash (the parts
// validation sees).
func readTool() *looptest.Func {
	return &looptest.Func{ToolName: "read",
		Schema: `{"type":"object","properties":{"path":{"type":"string"},"offset":{"type":"number"},"limit":{"type":"number"}},"required":["path"]}`,
		Fn: func(_ context.Context, _ string, args map[string]any, _ loop.UpdateFunc) (*loop.Result, error) {
			b, _ := loop.MarshalNoEscape(args)
			return loop.TextResult(string(b), nil), nil
		}}
}

func bashTool() *looptest.Func {
	return &looptest.Func{ToolName: "bash",
		Schema: `{"type":"object","properties":{"command":{"type":"string"},"timeout":{"type":"number"}},"required":["command"]}`,
		Fn: func(_ context.Context, _ string, args map[string]any, _ loop.UpdateFunc) (*loop.Result, error) {
			b, _ := loop.MarshalNoEscape(args)
			return loop.TextResult(string(b), nil), nil
		}}
}
