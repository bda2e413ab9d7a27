package helper

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

// DefaultMaxInFlight bounds the calls in flight on one stream; more wait
// for a place (below the helper's stream limit, so none fails).
const DefaultMaxInFlight = 64

// minPingTimeout is the least time a keepalive ping may go unanswered
// before the stream counts as lost.
const minPingTimeout = 10 * time.Second

// Config configures a client.
type Config struct {
	// Name is the backend's name: the prefix of errors and Info.Backend.
	Name string
	// Dial starts a helper in the target and returns its stdin (writes)
	// and stdout (reads) as one stream; Close ends it (EOF on the helper's
	// stdin, which makes it kill every command and exit). Dial is called
	// by New and again by the first call after the stream was lost.
	Dial func(ctx context.Context) (io.ReadWriteCloser, error)
	// Open, when set, is a stream to a helper already started (the exec
	// or session that probed the target went on as the helper, see
	// ReadProbe): New's first dial takes it instead of calling Dial, and
	// closes it when the helper does not answer.
	Open io.ReadWriteCloser
	// Hello describes the sandbox to the helper (Version is filled in).
	Hello proto.Hello
	// Build, when set, is the hex SHA-256 the helper binary must have; a
	// helper reporting another one is refused (ErrMismatch).
	Build string
	// MaxInFlight bounds concurrent calls (zero: DefaultMaxInFlight).
	MaxInFlight int
	// MaxConnections bounds the connections open in the target through
	// DialTarget (zero: DefaultMaxConnections).
	MaxConnections int
	// RawDial, when set, opens a raw connection to the target for op
	// ("dial PORT", "egress LISTENER CONN"; shim.HostDaemon.DialRaw): DialTarget
	// and the egress listeners try it first, and use a stream of the
	// session when it fails with anything but the daemon's refusal
	// (*shim.RawError).
	RawDial func(ctx context.Context, op string) (net.Conn, error)
	// Restore, when set, is called when a new helper fails to start or to
	// answer (the target restarted and lost the binary or the sandbox's
	// directories, say); the start is then tried once more.
	Restore func(ctx context.Context) error
	// OnLost, when set, is called once for each lost stream with the
	// reason (for logs and tests).
	OnLost func(error)
	// Keepalive, when set, sends an HTTP/2 ping after that long without a
	// frame from the helper, and drops the stream when three times as long
	// passes without the answer. It keeps a helper started with `__shim
	// serve --lease` alive (the lease must be several Keepalives), for
	// transports that never tell the helper its client is gone
	// (pods/exec). Zero: no pings (a paused container keeps its session).
	Keepalive time.Duration
	// StartTimeout bounds a session's start after Dial: the stream setup
	// and the hello (zero: DefaultStartTimeout). A helper that has not
	// answered by then is dropped and the start fails.
	StartTimeout time.Duration
	// Explain, when set, is given each error of a call that lost the
	// helper's stream or reply (one wrapping ops.ErrTransport) and returns
	// it with what the backend knows of the target (a container that
	// stopped or restarted); what it returns must wrap the error it got.
	Explain func(error) error
}

// ErrMismatch marks a helper of another build or protocol version.
var ErrMismatch = errors.New("helper: version mismatch")

// Client is an ops.Backend over one helper stream. It is safe for
// concurrent use. Views made by Confine share the stream.
type Client struct {
	c   *conn
	set *rootSet // nil: unconfined
}

var (
	_ ops.Backend           = (*Client)(nil)
	_ ops.GrepFS            = (*Client)(nil)
	_ ops.FindFS            = (*Client)(nil)
	_ ops.LineCountFS       = (*Client)(nil)
	_ ops.ReplaceFS         = (*Client)(nil)
	_ ops.CheckedOpenFS     = (*Client)(nil)
	_ ops.DirCheckingRunner = (*Client)(nil)
	_ ops.SpillRunner       = (*Client)(nil)
	_ ops.ListFS            = (*Client)(nil)
	_ ops.Confiner          = (*Client)(nil)
)

// conn is what the views share: the current session and how to make the
// next one.
type conn struct {
	cfg   Config
	sem   chan struct{}
	dials chan struct{} // the connections open (DialTarget)
	info  ops.Info
	open  io.ReadWriteCloser // Config.Open, until the first dial takes it

	mu        sync.Mutex
	sess      *session
	dialing   chan struct{}     // closed when a dial in progress ends
	raws      map[*rawConn]bool // raw connections open (Config.RawDial), closed with the client
	closed    bool
	closeOnce sync.Once
}

// session is one helper process and the HTTP/2 connection to it.
type session struct {
	rwc   io.ReadWriteCloser
	nc    *streamConn
	cc    *http.ClientConn
	hello proto.HelloReply
	dead  chan struct{}
	once  sync.Once
	err   error // why it died, set before dead is closed

	mu   sync.Mutex       // guards sets, and cc against kill while dialing
	sets map[*rootSet]int // server-side ids of the root sets
}

// New dials the helper and says hello.
func New(ctx context.Context, cfg Config) (*Client, error) {
	if cfg.Dial == nil {
		return nil, errors.New("helper: no Dial")
	}
	if cfg.Name == "" {
		cfg.Name = "helper"
	}
	n := cfg.MaxInFlight
	if n <= 0 {
		n = DefaultMaxInFlight
	}
	nd := cfg.MaxConnections
	if nd <= 0 {
		nd = DefaultMaxConnections
	}
	c := &conn{cfg: cfg, sem: make(chan struct{}, n), dials: make(chan struct{}, nd), open: cfg.Open}
	c.cfg.Open = nil
	s, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	c.sess = s
	c.info = c.infoFrom(s.hello)
	return &Client{c: c}, nil
}

func (c *conn) infoFrom(h proto.HelloReply) ops.Info {
	return ops.Info{
		Backend:      c.cfg.Name,
		WorkDir:      string(c.cfg.Hello.WorkDir),
		Home:         h.Home,
		User:         h.User,
		UID:          h.UID,
		GID:          h.GID,
		OS:           h.OS,
		Arch:         h.Arch,
		Shell:        h.Shell,
		SpillDir:     string(c.cfg.Hello.SpillDir),
		Capabilities: slices.Clone(h.Capabilities),
		Limits:       slices.Clone(h.Limits),
	}
}

// Hello returns what the current helper reported.
func (cl *Client) Hello() proto.HelloReply {
	cl.c.mu.Lock()
	defer cl.c.mu.Unlock()
	if cl.c.sess == nil {
		return proto.HelloReply{}
	}
	return cl.c.sess.hello
}

// Info describes the target as the helper reported it.
func (cl *Client) Info() ops.Info {
	i := cl.c.info
	i.Capabilities = slices.Clone(i.Capabilities)
	i.Limits = slices.Clone(i.Limits)
	return i
}

// Close ends the stream: the helper kills every command and exits. Views
// made by Confine close the same stream. It is safe to call twice.
func (cl *Client) Close() error {
	c := cl.c
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		s := c.sess
		c.sess = nil
		raws := c.raws
		c.raws = nil
		c.mu.Unlock()
		if s != nil {
			s.kill(errors.New("closed"))
		}
		for r := range raws {
			r.Close()
		}
	})
	return nil
}

// End ends the current helper's calls (each command's tree is killed),
// waits for them, removes dir in the target when it is not empty, and then
// closes the stream as Close does. It never starts a helper: with no live
// one it only closes, and returns an error wrapping ops.ErrTransport (the
// caller removes dir another way).
func (cl *Client) End(ctx context.Context, dir string) error {
	defer cl.Close()
	c := cl.c
	c.mu.Lock()
	s := c.sess
	c.mu.Unlock()
	if s == nil || !s.alive() {
		return c.errorf("end: %w: no helper", ops.ErrTransport)
	}
	return s.callJSON(ctx, c, proto.PathEnd, proto.EndRequest{Remove: proto.Str(dir)}, nil)
}

func (c *conn) errorf(format string, a ...any) error {
	return fmt.Errorf(c.cfg.Name+": "+format, a...)
}

// dial starts a helper and says hello, restoring the target once if that
// fails.
func (c *conn) dial(ctx context.Context) (*session, error) {
	s, err := c.dialOnce(ctx)
	if err == nil || c.cfg.Restore == nil || ctx.Err() != nil {
		return s, err
	}
	if rerr := c.cfg.Restore(ctx); rerr != nil {
		return nil, fmt.Errorf("%w (restoring the helper: %v)", err, rerr)
	}
	return c.dialOnce(ctx)
}

func (c *conn) dialOnce(ctx context.Context) (*session, error) {
	rwc := c.open // only New's dial, before the conn is shared
	c.open = nil
	if rwc == nil {
		var err error
		if rwc, err = c.cfg.Dial(ctx); err != nil {
			return nil, err
		}
	}
	s := &session{rwc: rwc, dead: make(chan struct{}), sets: map[*rootSet]int{}}
	nc := &streamConn{rwc: rwc, onClose: func(err error) { s.kill(err) }}
	s.nc = nc
	// The start has its deadline: a helper that never answers, or answers
	// slowly without end, is dropped.
	ctx, cancel := context.WithTimeoutCause(ctx, c.startTimeout(), c.noHelloError())
	defer cancel()
	stopStart := context.AfterFunc(ctx, func() { s.kill(context.Cause(ctx)) })
	defer stopStart()
	t := &http.Transport{
		Protocols: proto.Protocols(),
		// The header list of a reply (the HTTP/2 client's
		// SETTINGS_MAX_HEADER_LIST_SIZE); frameWatch bounds the encoded
		// block.
		MaxResponseHeaderBytes: MaxHeaderBytes,
		DialContext: func(context.Context, string, string) (net.Conn, error) {
			return nc, nil
		},
		HTTP2: &http.HTTP2Config{
			MaxReceiveBufferPerStream:     1 << 20,
			MaxReceiveBufferPerConnection: 16 << 20,
			// Large DATA frames: a command's output frames (up to 256 KiB)
			// cross whole, in one write of the helper.
			MaxReadFrameSize: maxFrameSize,
		},
	}
	if k := c.cfg.Keepalive; k > 0 {
		t.HTTP2.SendPingTimeout = k
		// A ping unanswered for three periods, and at least
		// minPingTimeout, ends the stream: a loaded target (a helper
		// still starting) answers late, a dead stream never.
		t.HTTP2.PingTimeout = max(3*k, minPingTimeout)
	}
	cc, err := t.NewClientConn(ctx, "http", "helper:80")
	if err != nil {
		rwc.Close()
		return nil, c.errorf("helper connection: %w: %w", ops.ErrTransport, err)
	}
	// The stream may already have failed: the read loop started inside
	// NewClientConn, and kill must see cc or have run before it is set.
	s.mu.Lock()
	s.cc = cc
	dead := !s.alive()
	s.mu.Unlock()
	if dead {
		cc.Close()
		return nil, c.errorf("helper connection: %w: %w", ops.ErrTransport, s.err)
	}
	c.cfg.Hello.Version = proto.Version
	c.cfg.Hello.WantBuild = c.cfg.Hello.WantBuild || c.cfg.Build != ""
	var reply proto.HelloReply
	if err := s.callJSON(ctx, c, proto.PathHello, c.cfg.Hello, &reply); err != nil {
		s.kill(err)
		if limitErr(err) != nil {
			return nil, err
		}
		if cause := context.Cause(ctx); ctx.Err() != nil && errors.Is(cause, ops.ErrTransport) {
			return nil, cause // the start's deadline
		}
		if errors.Is(err, ops.ErrTransport) {
			return nil, c.errorf("helper did not answer: %w", err)
		}
		return nil, err
	}
	if reply.Version != proto.Version || (c.cfg.Build != "" && reply.Build != c.cfg.Build) {
		s.kill(ErrMismatch)
		return nil, c.errorf("%w: helper build %.12s protocol %d, want %.12s protocol %d", ErrMismatch, reply.Build, reply.Version, c.cfg.Build, proto.Version)
	}
	s.hello = reply
	return s, nil
}

// kill ends the session.
func (s *session) kill(reason error) {
	s.once.Do(func() {
		s.mu.Lock()
		s.err = reason
		close(s.dead)
		cc := s.cc
		s.mu.Unlock()
		if cc != nil {
			cc.Close()
		}
		s.rwc.Close()
	})
}

func (s *session) alive() bool {
	select {
	case <-s.dead:
		return false
	default:
		return true
	}
}

// session returns a live session, dialing a new helper when the last one
// was lost.
func (c *conn) session(ctx context.Context) (*session, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, c.errorf("%w: backend closed", ops.ErrTransport)
		}
		if s := c.sess; s != nil && s.alive() {
			// A connection that failed under a call whose error did not
			// end the session (a reply cut mid-body) is not reused: the
			// next call would fail on it instead of dialing again.
			if err := s.cc.Err(); err != nil {
				c.mu.Unlock()
				s.kill(err)
				continue
			}
			c.mu.Unlock()
			return s, nil
		}
		if wait := c.dialing; wait != nil {
			c.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if old := c.sess; old != nil && c.cfg.OnLost != nil {
			c.cfg.OnLost(old.err)
		}
		c.sess = nil
		wait := make(chan struct{})
		c.dialing = wait
		c.mu.Unlock()

		s, err := c.dial(ctx)
		c.mu.Lock()
		c.dialing = nil
		close(wait)
		if err == nil {
			if c.closed {
				s.kill(errors.New("closed"))
				c.mu.Unlock()
				return nil, c.errorf("%w: backend closed", ops.ErrTransport)
			}
			c.sess = s
		}
		c.mu.Unlock()
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}

// acquire takes a place among the calls in flight.
func (c *conn) acquire(ctx context.Context) error {
	select {
	case c.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *conn) release() { <-c.sem }

// roundTrip sends one request on s. A failure that is not the caller's
// context is a lost stream: the session is ended so the next call dials
// again, and the error wraps ops.ErrTransport.
func (s *session) roundTrip(ctx context.Context, c *conn, path string, header string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://helper"+path, body)
	if err != nil {
		return nil, err
	}
	if header != "" {
		req.Header.Set(proto.HeaderRequest, header)
	}
	resp, err := s.cc.RoundTrip(req)
	if err != nil {
		if ctx.Err() != nil && limitErr(s.nc.watch.failed()) == nil {
			return nil, context.Cause(ctx)
		}
		return nil, s.lost(c, err)
	}
	return resp, nil
}

// lost reports a failure of the stream or of a reply, ending the session
// when the stream is broken or the helper broke a bound.
func (s *session) lost(c *conn, err error) error {
	if le := s.overBound(err); le != nil {
		s.kill(le)
		return c.explain(c.errorf("helper: %w", le))
	}
	if cerr := s.cc.Err(); cerr != nil || !s.alive() {
		s.kill(err)
		return c.explain(c.errorf("helper stream lost: %w: %w", ops.ErrTransport, err))
	}
	// The connection is fine: a per-stream failure.
	return c.explain(c.errorf("helper: %w: %w", ops.ErrTransport, err))
}

// overBound returns the bound the helper broke, on this reply (err) or on
// the stream, or nil.
func (s *session) overBound(err error) *LimitError {
	if le := limitErr(err); le != nil {
		return le
	}
	if s.nc == nil {
		return nil
	}
	if le := s.nc.watch.failed(); le != nil {
		return le
	}
	// The HTTP/2 client ends the connection on a header block over its
	// MaxResponseHeaderBytes before frameWatch sees all of it.
	if err != nil && s.nc.watch.inHeaders() && s.cc != nil && s.cc.Err() != nil {
		return &LimitError{What: "reply header block", Limit: "64 KiB", Malformed: true}
	}
	return nil
}

// explain passes a transport failure through Config.Explain.
func (c *conn) explain(err error) error {
	if c.cfg.Explain == nil || !errors.Is(err, ops.ErrTransport) {
		return err
	}
	return c.cfg.Explain(err)
}

// replyError decodes an error reply (its text cut to proto.MaxErrorText).
func replyError(resp *http.Response, roots []ops.Root) error {
	defer resp.Body.Close()
	var e proto.Error
	data, _ := io.ReadAll(io.LimitReader(resp.Body, MaxReply))
	if err := json.Unmarshal(data, &e); err != nil {
		return fmt.Errorf("helper: status %d: %s", resp.StatusCode, clipText(strings.TrimSpace(string(data))))
	}
	return e.Err(roots)
}

// callJSON posts in as JSON and decodes the reply into out (nil: none).
func (s *session) callJSON(ctx context.Context, c *conn, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	resp, err := s.roundTrip(ctx, c, path, "", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNoContent {
		return replyError(resp, nil)
	}
	if out == nil {
		return nil
	}
	if err := decodeReply(resp.Body, replyName(path), out); err != nil {
		if ctx.Err() != nil && s.overBound(err) == nil {
			return context.Cause(ctx)
		}
		return s.lost(c, err)
	}
	return nil
}

// streamConn is a net.Conn over the helper's stdio. It follows the frames
// read: one over its bound fails the read.
type streamConn struct {
	rwc     io.ReadWriteCloser
	onClose func(error)
	once    sync.Once
	watch   frameWatch
}

func (c *streamConn) Read(p []byte) (int, error) {
	n, err := c.rwc.Read(p)
	if le := c.watch.see(p[:n]); le != nil {
		n, err = 0, le
	}
	if err != nil {
		c.once.Do(func() { go c.onClose(fmt.Errorf("read: %w", err)) })
	}
	return n, err
}

func (c *streamConn) Write(p []byte) (int, error) {
	n, err := c.rwc.Write(p)
	if err != nil {
		c.once.Do(func() { go c.onClose(fmt.Errorf("write: %w", err)) })
	}
	return n, err
}

func (c *streamConn) Close() error {
	return c.rwc.Close()
}

func (c *streamConn) LocalAddr() net.Addr                { return addr{} }
func (c *streamConn) RemoteAddr() net.Addr               { return addr{} }
func (c *streamConn) SetDeadline(t time.Time) error      { return nil }
func (c *streamConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *streamConn) SetWriteDeadline(t time.Time) error { return nil }

type addr struct{}

func (addr) Network() string { return "helper" }
func (addr) String() string  { return "helper" }
