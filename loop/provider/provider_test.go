package provider

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/loop"
)

func TestPartialJSON(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{``, `{}`},
		{`{`, `{}`},
		{`{"pa`, `{}`},
		{`{"path"`, `{}`},
		{`{"path":`, `{}`},
		{`{"path":"src/ma`, `{"path":"src/ma"}`},
		{`{"path":"a\`, `{"path":"a"}`},
		{`{"path":"a","limit":1`, `{"path":"a","limit":1}`},
		{`{"path":"a","limit":tr`, `{"path":"a"}`},
		{`{"edits":[{"oldText":"x","newText":"y"},{"old`, `{"edits":[{"oldText":"x","newText":"y"},{}]}`},
		{`{"a":[1,2`, `{"a":[1,2]}`},
		{`{"a":"b"}`, `{"a":"b"}`},
		{`nonsense`, `{}`},
	} {
		if got := string(PartialJSON([]byte(tc.in))); got != tc.want {
			t.Errorf("PartialJSON(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestBuilderEvents(t *testing.T) {
	var types []string
	var last *loop.StreamEvent
	b := NewBuilder(func(ev *loop.StreamEvent) {
		types = append(types, ev.Type)
		last = ev
	})
	ti := b.Open(loop.Part{Type: "text"})
	b.Delta(ti, "Hel")
	b.Delta(ti, "lo")
	b.Close(ti)
	ci := b.Open(loop.Part{Type: "toolCall", ID: "c1", Name: "read"})
	b.Delta(ci, `{"path":"a.t`)
	if got := string(last.Partial.Content[ci].Arguments); got != `{"path":"a.t"}` {
		t.Errorf("partial arguments %s", got)
	}
	b.Delta(ci, `xt"}`)
	b.Close(ci)
	want := "start text_start text_delta text_delta text_end toolcall_start toolcall_delta toolcall_delta toolcall_end"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("events %s, want %s", got, want)
	}
	m := b.Message()
	if m.Content[0].Text != "Hello" || string(m.Content[1].Arguments) != `{"path":"a.txt"}` {
		t.Errorf("message %+v", m.Content)
	}
	// Snapshots are copies: later deltas do not change an emitted one.
	if *last.ContentIndex != 1 || len(last.Partial.Content) != 2 {
		t.Errorf("last event %+v", last)
	}
}

func TestBuilderKeepsInvalidArguments(t *testing.T) {
	b := NewBuilder(nil)
	i := b.Open(loop.Part{Type: "toolCall", ID: "c", Name: "read"})
	b.Delta(i, `{"path":`)
	m := b.Message() // the stream ended here
	if got := string(m.Content[i].Arguments); got != `{"path":` {
		t.Errorf("arguments %q, want the raw text (the loop reports it as invalid)", got)
	}
}

func TestRedact(t *testing.T) {
	base := fmt.Errorf("wrapped: %w", errors.New(`401 {"error":"bad key sk-secret-123"}`))
	err := Redact(base, "sk-secret-123", "")
	if strings.Contains(err.Error(), "sk-secret") || !strings.Contains(err.Error(), "***") {
		t.Errorf("Redact: %v", err)
	}
	if !errors.Is(err, base) {
		t.Error("Redact lost the chain")
	}
	if Redact(base, "absent") != base {
		t.Error("Redact changed an error without secrets")
	}
}
