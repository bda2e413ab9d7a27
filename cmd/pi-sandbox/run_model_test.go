package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/loop/provider/providertest"
)

// signalWriter cancels when what was written so far contains a marker:
// Ctrl-C at a known point of the session, without sleeping.
type signalWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	marker string
	cancel func()
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.cancel != nil && strings.Contains(w.buf.String(), w.marker) {
		w.cancel()
		w.cancel = nil
	}
	return len(p), nil
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// Ctrl-C while the model's bash call runs: the command is killed (its
// result says so), no further request is made, the run exits 1.
func TestRunModelInterruptKillsTool(t *testing.T) {
	chunk := func(delta, finish string) providertest.Event {
		return providertest.Event{Data: `{"id":"c","object":"chat.completion.chunk","created":1,"model":"x","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}`}
	}
	s := providertest.NewServer(t, providertest.SSE(
		chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"echo started; sleep 60\"}"}}]}`, "null"),
		chunk(`{}`, `"tool_calls"`),
		providertest.Event{Data: "[DONE]"}))
	t.Setenv("OPENAI_API_KEY", "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &signalWriter{marker: `"type":"tool_execution_update"`, cancel: cancel}
	var errOut bytes.Buffer
	code := runMain(ctx, []string{"run", "--json", "--workdir", t.TempDir(), "--model", "openai/x", "--base-url", s.URL + "/v1", "run it"},
		stdio{strings.NewReader(""), out, &errOut})
	if code != 1 {
		t.Errorf("exit %d, want 1; stderr: %s", code, errOut.String())
	}
	got := out.String()
	if !strings.Contains(got, `"type":"tool_execution_end","toolCallId":"call_1","toolName":"bash"`) || !strings.Contains(got, "Command aborted") {
		t.Errorf("no aborted bash result in:\n%s", got)
	}
	if !strings.Contains(errOut.String(), "session ended: aborted") {
		t.Errorf("stderr: %s", errOut.String())
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("%d requests, want 1 (none after the abort)", n)
	}
}
