package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/loop/looptest"
)

// TestBatchDefaultIDs: calls without an id get call_1, call_2, … by
// position, in pi's event stream (the default) and in --results.
func TestBatchDefaultIDs(t *testing.T) {
	dir := t.TempDir()
	in := `[{"name":"bash","arguments":{"command":"echo one"}},{"id":"mine","name":"ls","arguments":{}},{"name":"frobnicate","arguments":{}}]`
	out, errs, code := cli(t, in, "batch", "--workdir", dir)
	if code != 0 || errs != "" {
		t.Fatalf("batch: exit %d, stderr %q", code, errs)
	}
	for _, id := range []string{"call_1", "mine", "call_3"} {
		if !strings.Contains(out, `{"type":"message_end","message":{"role":"toolResult","toolCallId":"`+id+`"`) {
			t.Errorf("no message_end for %s in\n%s", id, out)
		}
	}
	if strings.Contains(out, `"toolCallId":""`) || strings.Contains(out, "call_2") {
		t.Errorf("an id left empty or given to a call that has one:\n%s", out)
	}

	out, errs, code = cli(t, in, "batch", "--workdir", dir, "--results")
	if code != 0 || errs != "" {
		t.Fatalf("batch --results: exit %d, stderr %q", code, errs)
	}
	got := map[string]string{}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for _, line := range lines {
		var r struct {
			ID, Name string
			Result   struct {
				Content []struct{ Text string }
				IsError bool
			}
		}
		var keys map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &keys); err != nil || len(keys) != 3 || keys["id"] == nil || keys["name"] == nil || keys["result"] == nil {
			t.Fatalf("--results line %q is not {\"id\",\"name\",\"result\"}: %v", line, err)
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("--results line %q: %v", line, err)
		}
		got[r.ID] = r.Name + " " + r.Result.Content[0].Text
	}
	want := map[string]string{"call_1": "bash one\n", "mine": "ls (empty directory)", "call_3": "frobnicate Tool frobnicate not found"}
	if len(lines) != 3 || len(got) != 3 {
		t.Fatalf("--results: %d lines, want 3:\n%s", len(lines), out)
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("--results %s: %q, want %q", id, got[id], w)
		}
	}
}

// TestBatchResultsAsEachFinishes: --results writes a call's line when it
// finishes: a waits for b's line to be written, so b's line comes first
// and a finishes only because it was written.
func TestBatchResultsAsEachFinishes(t *testing.T) {
	gates := &looptest.Gates{}
	withTools(t, looptest.Gate(gates, nil), looptest.Echo())
	in := `[{"id":"a","name":"gate","arguments":{"wait":"b-written","text":"A"}},{"id":"b","name":"echo","arguments":{"text":"B"}}]`
	var out bytes.Buffer
	w := &lineHook{w: &out, on: func(line string) {
		if strings.HasPrefix(line, `{"id":"b",`) {
			gates.Open("b-written")
		}
	}}
	var errs bytes.Buffer
	code := runMain(context.Background(), []string{"batch", "--results"}, stdio{strings.NewReader(in), w, &errs})
	want := `{"id":"b","name":"echo","result":{"content":[{"type":"text","text":"B"}],"details":{"id":"b"},"isError":false}}` + "\n" +
		`{"id":"a","name":"gate","result":{"content":[{"type":"text","text":"A"}],"isError":false}}` + "\n"
	if code != 0 || out.String() != want {
		t.Errorf("exit %d, stderr %q, stdout\n%s\nwant\n%s", code, errs.String(), out.String(), want)
	}
}

// lineHook calls on with each complete line written through it.
type lineHook struct {
	mu  sync.Mutex
	w   io.Writer
	buf string
	on  func(string)
}

func (h *lineHook) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n, err := h.w.Write(p)
	h.buf += string(p[:n])
	for {
		i := strings.IndexByte(h.buf, '\n')
		if i < 0 {
			break
		}
		h.on(h.buf[:i])
		h.buf = h.buf[i+1:]
	}
	return n, err
}

func TestBatchHelpDocumentsInputAndEvents(t *testing.T) {
	out, errs, code := cli(t, "", "batch", "-h")
	help := out + errs
	if code != 0 {
		t.Fatalf("batch -h: exit %d", code)
	}
	for _, want := range []string{
		`[{"id":"a","name":"bash","arguments":{"command":"ls"}}`, "call_1, call_2",
		`{"type":"tool_execution_start","toolCallId":"a"`, `{"type":"tool_execution_update","toolCallId":"a"`,
		`{"type":"tool_execution_end","toolCallId":"a"`, `{"type":"message_start","message":{"role":"toolResult"`,
		`{"type":"message_end","message":{"role":"toolResult"`, "--results", `{"id":"a","name":"bash","result":`,
	} {
		if !strings.Contains(help, want) {
			t.Errorf("batch -h does not show %s", want)
		}
	}
}

func TestBatchInputErrors(t *testing.T) {
	for in, want := range map[string]string{
		`{"id":"x"}`:                 `JSON array of {"id","name","arguments"}`,
		`[{"arguments":{}}]`:         "call 0 has no name",
		`[] []`:                      "more than one JSON value",
		`[{"name":"ls","id":"x"}] x`: "more than one JSON value",
	} {
		out, errs, code := cli(t, in, "batch")
		if code != 2 || out != "" || !strings.Contains(errs, want) {
			t.Errorf("batch < %s: exit %d, stdout %q, stderr %q (want %q)", in, code, out, errs, want)
		}
	}
}
