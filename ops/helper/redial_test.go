package helper_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/helper"
	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

// After a session ended on a bound, the next call starts a fresh helper on
// a stream of its own: nothing of the old stream is read as the new one's.

// countedStream records its Close.
type countedStream struct {
	io.ReadWriteCloser
	closed atomic.Bool
}

func (s *countedStream) Close() error {
	s.closed.Store(true)
	return s.ReadWriteCloser.Close()
}

// listingHelper is a helper whose hello names the session (its pid: 1 for
// the first dial, 2 for the next) and whose listing of /big never ends;
// /small holds one file. The listing of /cut begins, says so on cut and
// waits for the request's end.
func listingHelper(session int, cut chan<- struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case proto.PathHello:
			json.NewEncoder(w).Encode(proto.HelloReply{Version: proto.Version, OS: "linux", PID: session})
		case proto.PathFS:
			var req proto.FSRequest
			json.NewDecoder(r.Body).Decode(&req)
			if req.Path == "/cut" {
				io.WriteString(w, `{"entries":[`)
				w.(http.Flusher).Flush()
				cut <- struct{}{}
				<-r.Context().Done()
				return
			}
			if req.Path == "/big" {
				io.WriteString(w, `{"entries":[`)
				for r.Context().Err() == nil {
					if _, err := io.WriteString(w, `{"name":"`+strings.Repeat("n", 200)+`","mode":420},`); err != nil {
						return
					}
				}
				return
			}
			json.NewEncoder(w).Encode(proto.FSReply{Entries: []proto.FileInfo{{Name: "a.txt", Mode: 0o644}}})
		default:
			http.Error(w, "no", http.StatusNotFound)
		}
	}
}

// sessions is a Dial whose every dial starts a new fake helper (from
// handler, given the dial's number from 1) and records its stream.
type sessions struct {
	handler func(n int) func(context.Context) (io.ReadWriteCloser, error)
	mu      sync.Mutex
	streams []*countedStream
}

func (s *sessions) dial(ctx context.Context) (io.ReadWriteCloser, error) {
	s.mu.Lock()
	n := len(s.streams) + 1
	s.mu.Unlock()
	rwc, err := s.handler(n)(ctx)
	if err != nil {
		return nil, err
	}
	cs := &countedStream{ReadWriteCloser: rwc}
	s.mu.Lock()
	s.streams = append(s.streams, cs)
	s.mu.Unlock()
	return cs, nil
}

func (s *sessions) stream(i int) *countedStream {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i >= len(s.streams) {
		return nil
	}
	return s.streams[i]
}

func (s *sessions) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.streams)
}

// TestBoundBreakRedials: a listing over MaxListReply fails with a clear
// LimitError and ends the session (its stream is closed before the call
// returns); the next call starts a fresh helper, without Restore (the
// start did not fail), and is answered on the new stream.
func TestBoundBreakRedials(t *testing.T) {
	ss := &sessions{handler: func(n int) func(context.Context) (io.ReadWriteCloser, error) {
		return fakeHelper(t, listingHelper(n, nil))
	}}
	var restores atomic.Int32
	var lost []error
	var lostMu sync.Mutex
	cl, err := helper.New(t.Context(), helper.Config{
		Name:    "fake",
		Dial:    ss.dial,
		Restore: func(context.Context) error { restores.Add(1); return nil },
		OnLost:  func(err error) { lostMu.Lock(); lost = append(lost, err); lostMu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	for round := 1; round <= 3; round++ {
		_, err := cl.ReadDir(t.Context(), "/big")
		var le *helper.LimitError
		if !errors.As(err, &le) || !errors.Is(err, ops.ErrTransport) || !strings.HasPrefix(err.Error(), "fake: helper: the helper's fs reply exceeds 8 MiB") {
			t.Fatalf("round %d: ReadDir over the bound = %v; want a *helper.LimitError wrapping ops.ErrTransport, prefixed fake: helper:", round, err)
		}
		if s := ss.stream(round - 1); s == nil || !s.closed.Load() {
			t.Fatalf("round %d: the stream of the session over the bound is still open", round)
		}
		des, err := cl.ReadDir(t.Context(), "/small")
		if err != nil || len(des) != 1 || des[0].Name() != "a.txt" {
			t.Fatalf("round %d: ReadDir after the bound = %v, %v", round, des, err)
		}
		if n, pid := ss.count(), cl.Hello().PID; n != round+1 || pid != round+1 {
			t.Fatalf("round %d: %d dials, helper pid %d; want a fresh helper (%d)", round, n, pid, round+1)
		}
		if s := ss.stream(round); s.closed.Load() {
			t.Fatalf("round %d: the new session's stream is closed", round)
		}
	}
	if n := restores.Load(); n != 0 {
		t.Errorf("Restore called %d times: the new helpers started at once", n)
	}
	lostMu.Lock()
	defer lostMu.Unlock()
	if len(lost) != 3 {
		t.Fatalf("OnLost called %d times, want 3: %v", len(lost), lost)
	}
	for _, err := range lost {
		if le := (*helper.LimitError)(nil); !errors.As(err, &le) {
			t.Errorf("OnLost(%v): not the bound", err)
		}
	}
}

// textStream is the stream of a helper that never started: what the
// engine says when an exec cannot start in a container that is stopping,
// then its end.
func textStream(text string) func(context.Context) (io.ReadWriteCloser, error) {
	return func(context.Context) (io.ReadWriteCloser, error) {
		pr, pw := io.Pipe()
		go func() {
			io.WriteString(pw, text)
			pw.Close()
		}()
		return struct {
			io.Reader
			io.Writer
			io.Closer
		}{pr, io.Discard, pr}, nil
	}
}

const engineText = "OCI runtime exec failed: exec failed: cannot exec in a stopped container: unknown\r\n"

// TestStartOnTextRestores: a new helper whose stream is text (not HTTP/2)
// fails its start with an error that names the bound it broke; Restore
// runs, and the start tried once more is a fresh stream that works. When
// Restore fails too, its error is in the start's.
func TestStartOnTextRestores(t *testing.T) {
	ss := &sessions{handler: func(n int) func(context.Context) (io.ReadWriteCloser, error) {
		if n == 1 {
			return textStream(engineText)
		}
		return fakeHelper(t, listingHelper(n, nil))
	}}
	var restores atomic.Int32
	cl, err := helper.New(t.Context(), helper.Config{
		Name:         "fake",
		Dial:         ss.dial,
		StartTimeout: 5 * time.Second,
		Restore:      func(context.Context) error { restores.Add(1); return nil },
	})
	if err != nil {
		t.Fatalf("New = %v; want the start tried again after Restore", err)
	}
	t.Cleanup(func() { cl.Close() })
	if n := restores.Load(); n != 1 || ss.count() != 2 || !ss.stream(0).closed.Load() {
		t.Fatalf("%d restores, %d dials, first stream closed %v; want 1, 2, true", n, ss.count(), ss.stream(0).closed.Load())
	}
	des, err := cl.ReadDir(t.Context(), "/small")
	if err != nil || len(des) != 1 {
		t.Fatalf("ReadDir on the restored helper = %v, %v", des, err)
	}

	// Restore fails: both errors are said, neither empty.
	_, err = helper.New(t.Context(), helper.Config{
		Name:         "fake",
		Dial:         textStream(engineText),
		StartTimeout: 5 * time.Second,
		Restore:      func(context.Context) error { return errors.New("fake: restore: exit 126: " + engineText) },
	})
	if err == nil {
		t.Fatal("a helper whose stream is text started")
	}
	var le *helper.LimitError
	if !errors.As(err, &le) || !errors.Is(err, ops.ErrTransport) || !strings.HasPrefix(err.Error(), "fake: helper: the helper's HTTP/2 frame (") || !strings.Contains(err.Error(), "(restoring the helper: fake: restore: exit 126: OCI runtime exec failed") {
		t.Fatalf("New = %v; want the bound broken and the restore's failure", err)
	}
}

// TestCutMidReplyRedials: a stream that dies while a reply is being read
// fails that call with a transport error; the next call does not reuse
// the dead connection (which would fail it too) but dials a fresh helper.
func TestCutMidReplyRedials(t *testing.T) {
	started := make(chan struct{}, 1)
	ss := &sessions{handler: func(n int) func(context.Context) (io.ReadWriteCloser, error) {
		return fakeHelper(t, listingHelper(n, started))
	}}
	cl, err := helper.New(t.Context(), helper.Config{Name: "fake", Dial: ss.dial})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	errc := make(chan error, 1)
	go func() { _, err := cl.ReadDir(t.Context(), "/cut"); errc <- err }()
	<-started
	// The connection dies under the reply (as ssh's keepalive ends a
	// frozen one): the stream's underlying pipe is closed.
	ss.stream(0).ReadWriteCloser.Close()
	if err := <-errc; !errors.Is(err, ops.ErrTransport) {
		t.Fatalf("the cut call = %v; want a transport failure", err)
	}
	des, err := cl.ReadDir(t.Context(), "/small")
	if err != nil || len(des) != 1 {
		t.Fatalf("the next call = %v, %v; want it answered by a fresh helper", des, err)
	}
	if n, pid := ss.count(), cl.Hello().PID; n != 2 || pid != 2 {
		t.Errorf("%d dials, helper pid %d; want a second helper", n, pid)
	}
}
