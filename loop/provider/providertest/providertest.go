// Package providertest has what the providers' tests share: a local fake
// model server that records requests and answers from a queue, SSE
// writing, and a two-turn session on the local sandbox backend.
package providertest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops/local"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
)

// Request is one request the fake server received.
type Request struct {
	Path   string
	Header http.Header
	Body   []byte
}

// Reply answers one request.
type Reply func(w http.ResponseWriter, r *http.Request)

// Server is a fake model API on 127.0.0.1. Each request gets the next
// reply of the queue; past its end, a 500.
type Server struct {
	*httptest.Server
	mu      sync.Mutex
	replies []Reply
	reqs    []Request
}

// NewServer starts a server answering with replies; it stops with the test.
func NewServer(t testing.TB, replies ...Reply) *Server {
	s := &Server{replies: replies}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.reqs)
	s.reqs = append(s.reqs, Request{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	var reply Reply
	if n < len(s.replies) {
		reply = s.replies[n]
	}
	s.mu.Unlock()
	if reply == nil {
		http.Error(w, `{"error":{"type":"api_error","message":"fake server: no reply queued"}}`, http.StatusInternalServerError)
		return
	}
	reply(w, r)
}

// Requests returns the requests so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request{}, s.reqs...)
}

// Event is one server-sent event; an empty Name writes only data.
type Event struct{ Name, Data string }

// SSE replies 200 with a text/event-stream of events, flushed one by one.
func SSE(events ...Event) Reply {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		WriteEvents(w, events...)
	}
}

// WriteEvents writes and flushes events.
func WriteEvents(w http.ResponseWriter, events ...Event) {
	for _, e := range events {
		if e.Name != "" {
			fmt.Fprintf(w, "event: %s\n", e.Name)
		}
		fmt.Fprintf(w, "data: %s\n\n", e.Data)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
}

// Status replies with a status, headers (name, value pairs) and a JSON body.
func Status(code int, body string, header ...string) Reply {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

// Cut writes events and then breaks the connection without finishing the
// response, as a dropped stream does.
func Cut(events ...Event) Reply {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		WriteEvents(w, events...)
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	}
}

// Session runs a whole agent session with p on the local sandbox backend in
// a temporary directory holding files, opened with prompt. It returns the
// messages and the events.
func Session(t testing.TB, p loop.Provider, files map[string]string, prompt string) ([]loop.Message, []loop.Event) {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	b, err := local.New(ctx, local.Config{WorkDir: dir})
	if err != nil {
		t.Fatalf("local.New: %v", err)
	}
	sb, err := sandbox.OpenBackend(ctx, b, sandbox.Config{})
	if err != nil {
		t.Fatalf("sandbox.OpenBackend: %v", err)
	}
	defer sb.Close()
	l, err := loop.New(sb.Tools())
	if err != nil {
		t.Fatal(err)
	}
	var events []loop.Event
	msgs := l.Run(ctx, p, loop.RunOptions{Prompts: []loop.Message{loop.UserText(prompt)}}, func(e loop.Event) {
		events = append(events, e)
	})
	return msgs, events
}

// UpdateTypes returns the assistantMessageEvent types of the message_update
// events, in order.
func UpdateTypes(events []loop.Event) []string {
	var out []string
	for _, e := range events {
		if u, ok := e.(loop.MessageUpdate); ok && u.AssistantMessageEvent != nil {
			out = append(out, u.AssistantMessageEvent.Type)
		}
	}
	return out
}
