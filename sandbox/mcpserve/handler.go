package mcpserve

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pi-sandbox/pi-sandbox/sandbox"
)

// Defaults of [Options].
const (
	DefaultMaxSessions = 32
	DefaultSessionIdle = 30 * time.Minute
	DefaultReplayBytes = 8 << 20
	// MaxBodyBytes is the largest request body the handler reads; a longer
	// one is answered 413 (at once when its Content-Length says so).
	MaxBodyBytes = 32 << 20
)

// Options configure a [Handler].
type Options struct {
	// NewSandbox makes the sandbox of a new session (required); session
	// is the session's id. The handler closes the sandbox when the session
	// ends. An error is the client's answer to initialize.
	NewSandbox func(ctx context.Context, session string) (*sandbox.Sandbox, error)
	// Tokens are the bearer tokens a request may carry. A session belongs
	// to the token that opened it. Empty: no authentication.
	Tokens []string
	// MaxSessions bounds the sessions open at once (0: DefaultMaxSessions).
	MaxSessions int
	// SessionIdle ends a session that has had no request and no call in
	// progress for this long (0: DefaultSessionIdle).
	SessionIdle time.Duration
	// ReplayBytes bounds each session's kept events (0:
	// DefaultReplayBytes).
	ReplayBytes int
	// OnEnd, when set, is called with a session's id after its sandbox is
	// closed.
	OnEnd func(session string)
	// Logf, when set, receives a line as each session starts and ends.
	Logf func(format string, args ...any)
}

// Handler serves MCP Streamable HTTP with a sandbox per session. Mount it
// at the endpoint's path; [Handler.Health] answers health checks. Close
// ends every session.
type Handler struct {
	opts     Options
	sdk      *mcp.StreamableHTTPHandler
	events   *eventStore
	template *mcp.Server
	tokens   [][32]byte

	ctx    context.Context // ends at Close: sandboxes being made stop
	cancel context.CancelFunc
	wg     sync.WaitGroup // sessions started and not yet ended

	mu       sync.Mutex
	sessions map[string]*session
	pending  int // sessions whose sandbox is being made
	closed   bool
}

// serverKey carries a new session's server from ServeHTTP to the SDK's
// getServer.
type serverKey struct{}

// New returns a handler; it refuses Options without NewSandbox.
func New(opts Options) (*Handler, error) {
	if opts.NewSandbox == nil {
		return nil, errors.New("mcpserve: Options.NewSandbox is required")
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.SessionIdle <= 0 {
		opts.SessionIdle = DefaultSessionIdle
	}
	if opts.ReplayBytes <= 0 {
		opts.ReplayBytes = DefaultReplayBytes
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	h := &Handler{opts: opts, events: newEventStore(opts.ReplayBytes), sessions: map[string]*session{}}
	for _, t := range opts.Tokens {
		h.tokens = append(h.tokens, sha256.Sum256([]byte(t)))
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	// The template serves what comes without a session and is not an
	// initialize (the SDK answers it); its sessions have no id, so the SDK
	// ends them with their request.
	h.template = mcp.NewServer(&mcp.Implementation{Name: "pi-sandbox", Version: "dev"}, &mcp.ServerOptions{GetSessionID: func() string { return "" }})
	h.sdk = mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		if s, ok := r.Context().Value(serverKey{}).(*mcp.Server); ok {
			return s
		}
		return h.template
	}, &mcp.StreamableHTTPOptions{EventStore: h.events, MaxRequestBodyBytes: MaxBodyBytes})
	return h, nil
}

// ServeHTTP serves one request of the endpoint.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tok, ok := h.authorize(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", "Bearer")
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if r.ContentLength > MaxBodyBytes {
		tooLarge(w)
		return
	}
	if id := r.Header.Get("Mcp-Session-Id"); id != "" {
		s := h.lookup(id, tok)
		if s == nil {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		switch {
		case r.Method == http.MethodDelete:
			// The session ends here, its calls cancelled first: the SDK's
			// own DELETE would wait for them to finish.
			s.end("deleted")
			w.WriteHeader(http.StatusNoContent)
			return
		case r.Method == http.MethodGet && h.replayLost(w, r, id):
			return
		}
		defer s.acquire()()
		h.sdk.ServeHTTP(w, r)
		return
	}
	if r.Method != http.MethodPost {
		h.sdk.ServeHTTP(w, r) // the SDK refuses it
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			tooLarge(w)
		} else {
			http.Error(w, "failed to read body", http.StatusBadRequest)
		}
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if msg, err := jsonrpc.DecodeMessage(body); err == nil {
		if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "initialize" && req.ID.IsValid() {
			h.initialize(w, r, tok, req.ID)
			return
		}
	}
	h.sdk.ServeHTTP(w, r)
}

func tooLarge(w http.ResponseWriter) {
	http.Error(w, fmt.Sprintf("request body over %d MiB", MaxBodyBytes>>20), http.StatusRequestEntityTooLarge)
}

// authorize returns the index of the request's bearer token (-1 without
// authentication), or false.
func (h *Handler) authorize(r *http.Request) (int, bool) {
	if len(h.tokens) == 0 {
		return -1, true
	}
	v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return 0, false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(v)))
	found := -1
	for i, t := range h.tokens {
		if subtle.ConstantTimeCompare(sum[:], t[:]) == 1 {
			found = i
		}
	}
	return found, found >= 0
}

// lookup returns the open session id of token tok, or nil.
func (h *Handler) lookup(id string, tok int) *session {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sessions[id]
	if s == nil || s.token != tok {
		return nil
	}
	return s
}

// replayLost answers a resumption whose Last-Event-ID is older than the
// session keeps with an explicit 400, and reports whether it did.
func (h *Handler) replayLost(w http.ResponseWriter, r *http.Request, session string) bool {
	eid := r.Header.Get("Last-Event-ID")
	i := strings.LastIndexByte(eid, '_')
	if i < 0 {
		return false
	}
	idx, err := strconv.Atoi(eid[i+1:])
	if err != nil || !h.events.purged(r.Context(), session, eid[:i], idx) {
		return false
	}
	http.Error(w, fmt.Sprintf("events after %s are no longer kept: the session keeps its last %d bytes of events; call again", eid, h.opts.ReplayBytes), http.StatusBadRequest)
	return true
}

// initialize opens a session: it makes the sandbox, then lets the SDK
// answer the initialize request with the session's own server.
func (h *Handler) initialize(w http.ResponseWriter, r *http.Request, tok int, reqID jsonrpc.ID) {
	h.mu.Lock()
	switch {
	case h.closed:
		h.mu.Unlock()
		http.Error(w, "the server is shutting down", http.StatusServiceUnavailable)
		return
	case len(h.sessions)+h.pending >= h.opts.MaxSessions:
		h.mu.Unlock()
		w.Header().Set("Retry-After", "5")
		http.Error(w, fmt.Sprintf("the server has its %d sessions open; retry later", h.opts.MaxSessions), http.StatusServiceUnavailable)
		return
	}
	h.pending++
	h.wg.Add(1)
	h.mu.Unlock()

	id := rand.Text()
	s, err := h.newSession(r.Context(), id, tok)
	h.mu.Lock()
	h.pending--
	if err == nil && h.closed {
		err = errors.New("the server is shutting down")
	}
	if err == nil {
		h.sessions[id] = s
	}
	h.mu.Unlock()
	if err != nil {
		if s != nil {
			s.end("")
		} else {
			h.wg.Done()
		}
		writeError(w, reqID, fmt.Sprintf("pi-sandbox: the session's sandbox could not be made: %v", err))
		return
	}
	h.opts.Logf("session %s started", id)
	release := s.acquire()
	h.sdk.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), serverKey{}, s.srv)))
	var ss *mcp.ServerSession
	for x := range s.srv.Sessions() {
		ss = x
	}
	release()
	if ss == nil { // initialize failed, or the session ended already
		s.end("ended")
		return
	}
	if !s.attach(ss) {
		return
	}
	go func() {
		ss.Wait()
		s.end("ended")
	}()
}

// newSession makes session id's sandbox and server.
func (h *Handler) newSession(ctx context.Context, id string, tok int) (*session, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(h.ctx, cancel)()
	sb, err := h.opts.NewSandbox(ctx, id)
	if err != nil {
		return nil, err
	}
	l, err := sb.NewLoop()
	if err != nil {
		sb.Close()
		return nil, err
	}
	s := &session{h: h, id: id, token: tok, sb: sb}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.srv = newServer(l, serverConfig{session: id, call: s.call})
	return s, nil
}

// writeError answers a request with a JSON-RPC error.
func writeError(w http.ResponseWriter, id jsonrpc.ID, msg string) {
	b, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg}})
	if err != nil {
		b, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": jsonrpc.CodeInternalError, "message": msg}})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusInternalServerError)
	w.Write(b)
}

// Sessions returns the number of open sessions.
func (h *Handler) Sessions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sessions)
}

// Health answers a health check, without authentication: {"ok":true,
// "sessions":N}, and nothing else.
func (h *Handler) Health(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, "{\"ok\":true,\"sessions\":%d}\n", h.Sessions())
}

// Close ends every session, refuses new ones, and waits until every
// session's sandbox is closed or ctx ends.
func (h *Handler) Close(ctx context.Context) error {
	h.mu.Lock()
	h.closed = true
	all := make([]*session, 0, len(h.sessions))
	for _, s := range h.sessions {
		all = append(all, s)
	}
	h.mu.Unlock()
	h.cancel()
	for _, s := range all {
		go s.end("server shutdown")
	}
	done := make(chan struct{})
	go func() {
		h.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("mcpserve: sessions still ending: %w", ctx.Err())
	}
}
