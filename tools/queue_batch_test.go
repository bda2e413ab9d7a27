package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops/memfs"
)

// TestBatchWriteThenEditInSourceOrder runs 100 parallel batches that write
// a file and then edit it, several times over: the calls must enter the
// mutation queue in source order, as pi's do (the edit ran
// first in 4 of 10 runs). Every batch must end in the last edit's content
// with every call a success.
func TestBatchWriteThenEditInSourceOrder(t *testing.T) {
	m := memfs.New()
	l, err := loop.New(All(m)) // as the sandbox and the CLI build them (wrapped)
	if err != nil {
		t.Fatal(err)
	}
	for n := range 100 {
		name := fmt.Sprintf("f%d.txt", n)
		arg := func(v any) json.RawMessage {
			b, _ := json.Marshal(v)
			return b
		}
		write := func(id, content string) loop.ToolCall {
			return loop.ToolCall{ID: id, Name: "write", Arguments: arg(map[string]any{"path": name, "content": content})}
		}
		edit := func(id, from, to string) loop.ToolCall {
			return loop.ToolCall{ID: id, Name: "edit", Arguments: arg(map[string]any{"path": name,
				"edits": []any{map[string]any{"oldText": from, "newText": to}}})}
		}
		calls := []loop.ToolCall{
			write("w0", "v0\n"), edit("e1", "v0", "v1"), edit("e2", "v1", "v2"),
			write("w3", "v3\n"), edit("e4", "v3", "v4"),
		}
		b := l.RunBatch(context.Background(), nil, calls, nil)
		for i, r := range b.Results {
			if text := r.Result.Content[0].Text; r.Result.IsError || !strings.HasPrefix(text, "Successfully") {
				t.Fatalf("batch %d call %s: %q", n, calls[i].ID, text)
			}
		}
		if got := contents(t, m, "/work/"+name); got != "v4\n" {
			t.Fatalf("batch %d: file %q, want the last edit's %q", n, got, "v4\n")
		}
	}
}
