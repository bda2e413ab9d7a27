package mcpserve

import (
	"context"
	"errors"
	"iter"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// eventStore keeps each session's stream events for replay, up to max
// bytes per session (the SDK's MemoryEventStore bounds one store as a
// whole): a session with a chatty call loses its own oldest events, never
// another session's.
type eventStore struct {
	max int

	mu       sync.Mutex
	sessions map[string]*mcp.MemoryEventStore
}

func newEventStore(max int) *eventStore {
	return &eventStore{max: max, sessions: map[string]*mcp.MemoryEventStore{}}
}

func (s *eventStore) session(id string, create bool) *mcp.MemoryEventStore {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.sessions[id]
	if m == nil && create {
		m = mcp.NewMemoryEventStore(nil)
		m.SetMaxBytes(s.max)
		s.sessions[id] = m
	}
	return m
}

func (s *eventStore) Open(ctx context.Context, sessionID, streamID string) error {
	return s.session(sessionID, true).Open(ctx, sessionID, streamID)
}

func (s *eventStore) Append(ctx context.Context, sessionID, streamID string, data []byte) error {
	return s.session(sessionID, true).Append(ctx, sessionID, streamID, data)
}

func (s *eventStore) After(ctx context.Context, sessionID, streamID string, index int) iter.Seq2[[]byte, error] {
	m := s.session(sessionID, false)
	if m == nil {
		return func(yield func([]byte, error) bool) {
			yield(nil, errors.New("mcpserve: no events kept for this session"))
		}
	}
	return m.After(ctx, sessionID, streamID, index)
}

func (s *eventStore) SessionClosed(_ context.Context, sessionID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sessions, sessionID)
	return nil
}

// purged reports whether events just after index of the stream are no
// longer kept (a client that reconnects with that Last-Event-ID would miss
// some).
func (s *eventStore) purged(ctx context.Context, sessionID, streamID string, index int) bool {
	m := s.session(sessionID, false)
	if m == nil {
		return false
	}
	for _, err := range m.After(ctx, sessionID, streamID, index) {
		return errors.Is(err, mcp.ErrEventsPurged)
	}
	return false
}
