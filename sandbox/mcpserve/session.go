package mcpserve

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pi-sandbox/pi-sandbox/sandbox"
)

// endGrace is how long a session's end waits for its calls to return after
// cancelling them before it closes the sandbox under them.
const endGrace = 5 * time.Second

// session is one MCP session and its sandbox.
type session struct {
	h     *Handler
	id    string
	token int
	sb    *sandbox.Sandbox
	srv   *mcp.Server
	// ctx ends when the session does: every call's context follows it.
	ctx    context.Context
	cancel context.CancelFunc

	mu    sync.Mutex
	ss    *mcp.ServerSession
	busy  int // requests and calls in progress
	timer *time.Timer
	ended bool
}

// acquire marks a request or call in progress (the idle timer stops) and
// returns the function that ends it.
func (s *session) acquire() func() {
	s.mu.Lock()
	s.busy++
	if s.timer != nil {
		s.timer.Stop()
	}
	s.mu.Unlock()
	var once sync.Once
	return func() { once.Do(s.release) }
}

func (s *session) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.busy--
	if s.busy > 0 || s.ended {
		return
	}
	if s.timer == nil {
		s.timer = time.AfterFunc(s.h.opts.SessionIdle, s.idle)
	} else {
		s.timer.Reset(s.h.opts.SessionIdle)
	}
}

func (s *session) idle() {
	s.mu.Lock()
	busy := s.busy > 0 || s.ended
	s.mu.Unlock()
	if !busy {
		s.end("idle")
	}
}

// call is a tool call's context: it ends with the session, and the
// session is busy until done.
func (s *session) call(ctx context.Context) (context.Context, func()) {
	release := s.acquire()
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.ctx, cancel)
	return ctx, func() {
		stop()
		cancel()
		release()
	}
}

// attach records the SDK's session; false when the session has ended
// already (it is closed then).
func (s *session) attach(ss *mcp.ServerSession) bool {
	s.mu.Lock()
	ended := s.ended
	s.ss = ss
	s.mu.Unlock()
	if ended {
		go ss.Close()
	}
	return !ended
}

// end ends the session once: its calls are cancelled, the SDK's session
// closed and the sandbox closed. why "" logs nothing (a session that
// never started).
func (s *session) end(why string) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended = true
	if s.timer != nil {
		s.timer.Stop()
	}
	ss := s.ss
	s.mu.Unlock()

	h := s.h
	h.mu.Lock()
	if h.sessions[s.id] == s {
		delete(h.sessions, s.id)
	}
	h.mu.Unlock()
	s.cancel()
	if ss != nil {
		closed := make(chan struct{})
		go func() {
			ss.Close()
			close(closed)
		}()
		select {
		case <-closed:
		case <-time.After(endGrace):
		}
	}
	if err := s.sb.Close(); err != nil {
		h.opts.Logf("session %s: closing its sandbox: %v", s.id, err)
	}
	if h.opts.OnEnd != nil {
		h.opts.OnEnd(s.id)
	}
	h.events.SessionClosed(context.Background(), s.id)
	if why != "" {
		h.opts.Logf("session %s ended (%s)", s.id, why)
	}
	h.wg.Done()
}
