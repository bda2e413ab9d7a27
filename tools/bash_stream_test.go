package tools

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

func TestBashFirstUpdateIsEmpty(t *testing.T) {
	_, err, updates := runBash(t, t.Context(), &bashFakeRunner{fn: bashEmitting(nil, "x")}, newBashMemFS(bashWorkDir), map[string]any{"command": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if len(updates) < 2 {
		t.Fatalf("%d updates", len(updates))
	}
	b, _ := loop.MarshalNoEscape(updates[0])
	if string(b) != `{"content":[],"isError":false}` {
		t.Errorf("first update %s", b)
	}
	b, _ = loop.MarshalNoEscape(updates[1])
	if string(b) != `{"content":[{"type":"text","text":"x"}],"details":{},"isError":false}` {
		t.Errorf("second update %s", b)
	}
}

func TestBashUpdatesThrottled(t *testing.T) {
	r := &bashFakeRunner{fn: func(_ context.Context, cmd *ops.Cmd) error {
		for i := range 5000 {
			cmd.Output.Write([]byte(strings.Repeat("y", i%7) + "\n"))
		}
		return nil
	}}
	res, err, updates := runBash(t, t.Context(), r, newBashMemFS(bashWorkDir, bashSpillDir), map[string]any{"command": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if len(updates) >= 25 {
		t.Errorf("%d updates for 5000 synchronous chunks, want < 25", len(updates))
	}
	last := updates[len(updates)-1]
	d := last.Details.(*bashDetails)
	if d.Truncation == nil || !d.Truncation.Truncated || d.FullOutputPath == "" {
		t.Errorf("last update details %+v", d)
	}
	if !strings.HasPrefix(res.Content[0].Text, last.Content[0].Text) {
		t.Error("last update is not the final output")
	}
}

// TestBashUpdateTimer: the pending timer emits on its own while the command
// is still running (the runner waits for that update before finishing).
func TestBashUpdateTimer(t *testing.T) {
	got := make(chan string, 10)
	r := &bashFakeRunner{fn: func(ctx context.Context, cmd *ops.Cmd) error {
		cmd.Output.Write([]byte("a")) // emitted at once
		cmd.Output.Write([]byte("b")) // within 100 ms: arms the timer
		cmd.Output.Write([]byte("c")) // timer already pending
		for text := range got {       // no sleep: wait for the timer's update
			if text == "abc" {
				return nil
			}
		}
		return nil
	}}
	tool := NewBash(r, newBashMemFS(bashWorkDir), bashTestInfo())
	var texts []string
	_, err := tool.Execute(t.Context(), "c", map[string]any{"command": "x"}, func(p *loop.Result) {
		if len(p.Content) == 1 {
			texts = append(texts, p.Content[0].Text)
			got <- p.Content[0].Text
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	// Normally "a|abc" (one timer for b and c); a stalled machine may emit
	// "ab" directly. Either way "abc" came before the command finished.
	if j := strings.Join(texts, "|"); j != "a|abc" && j != "a|ab|abc" {
		t.Errorf("updates %q, want a then abc", texts)
	}
}

func TestBashOutputAfterReturnIgnored(t *testing.T) {
	var out io.Writer
	r := &bashFakeRunner{fn: func(_ context.Context, cmd *ops.Cmd) error {
		cmd.Output.Write([]byte("before\n"))
		out = cmd.Output
		return nil
	}}
	tool := NewBash(r, newBashMemFS(bashWorkDir), bashTestInfo())
	n := 0
	res, err := tool.Execute(t.Context(), "c", map[string]any{"command": "x"}, func(*loop.Result) { n++ })
	if err != nil {
		t.Fatal(err)
	}
	seen := n
	if k, err := out.Write([]byte("after\n")); k != 6 || err != nil {
		t.Errorf("late write: %d, %v", k, err)
	}
	if n != seen || res.Content[0].Text != "before\n" {
		t.Errorf("late output changed the result or emitted an update: %q, %d updates", res.Content[0].Text, n-seen)
	}
}

func TestBashNoUpdateFunc(t *testing.T) {
	tool := NewBash(&bashFakeRunner{fn: bashEmitting(nil, bashLines(1, 3000))}, newBashMemFS(bashWorkDir, bashSpillDir), bashTestInfo())
	res, err := tool.Execute(t.Context(), "c", map[string]any{"command": "x"}, nil)
	if err != nil || !strings.Contains(res.Content[0].Text, "[Showing lines 1001-3000 of 3000.") {
		t.Fatalf("%v %v", res, err)
	}
}
