package loop_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/loop/looptest"
)

// A command policy in the before hook and redaction in the after hook, the
// way the sandbox layer plugs in.
func Example_hooks() {
	policy := loop.WithBeforeToolCall(func(ctx context.Context, c *loop.Call) (*loop.Block, error) {
		if strings.Contains(fmt.Sprint(c.Args["text"]), "rm -rf") {
			return &loop.Block{Reason: "blocked by policy: rm -rf"}, nil
		}
		return nil, nil
	})
	redact := loop.WithAfterToolCall(func(ctx context.Context, c *loop.Call, r *loop.Result) (*loop.Override, error) {
		var out []loop.Content
		for _, b := range r.Content {
			b.Text = strings.ReplaceAll(b.Text, "hunter2", "[redacted]")
			out = append(out, b)
		}
		return &loop.Override{Content: out}, nil
	})
	l, err := loop.New([]loop.Tool{looptest.Echo()}, policy, redact)
	if err != nil {
		panic(err)
	}
	b := l.RunBatch(context.Background(), nil, []loop.ToolCall{
		{ID: "1", Name: "echo", Arguments: []byte(`{"text":"password: hunter2"}`)},
		{ID: "2", Name: "echo", Arguments: []byte(`{"text":"rm -rf /"}`)},
	}, nil)
	for _, r := range b.Results {
		fmt.Println(r.ToolCallID, r.Result.IsError, r.Result.Content[0].Text)
	}
	// Output:
	// 1 false password: [redacted]
	// 2 true blocked by policy: rm -rf
}

// Events as JSON lines, as pi-sandbox batch prints them.
func ExampleLoop_RunBatch() {
	l, _ := loop.New([]loop.Tool{looptest.Echo()})
	l.RunBatch(context.Background(), nil, []loop.ToolCall{{ID: "t1", Name: "read", Arguments: []byte(`{}`)}}, func(ev loop.Event) {
		b, _ := loop.MarshalNoEscape(ev)
		fmt.Println(string(b))
	})
	// Output:
	// {"type":"tool_execution_start","toolCallId":"t1","toolName":"read","args":{}}
	// {"type":"tool_execution_end","toolCallId":"t1","toolName":"read","result":{"content":[{"type":"text","text":"Tool read not found"}],"details":{},"isError":true},"isError":true}
	// {"type":"message_start","message":{"role":"toolResult","toolCallId":"t1","toolName":"read","content":[{"type":"text","text":"Tool read not found"}],"details":{},"isError":true}}
	// {"type":"message_end","message":{"role":"toolResult","toolCallId":"t1","toolName":"read","content":[{"type":"text","text":"Tool read not found"}],"details":{},"isError":true}}
}
