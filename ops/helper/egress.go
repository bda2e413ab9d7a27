package helper

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

var _ ops.TargetListener = (*Client)(nil)

// ListenTarget listens on 127.0.0.1 inside the target (an ephemeral port)
// through the helper: each connection a process there makes is accepted
// here, its bytes carried both ways on one HTTP/2 stream of the helper's
// connection. The listener lives on the current helper session: when the
// session is lost, Accept fails (the target's port closed with it). Close
// closes the target's listener; connections accepted before stay open.
func (cl *Client) ListenTarget(ctx context.Context) (net.Listener, error) {
	c := cl.c
	s, err := c.session(ctx)
	if err != nil {
		return nil, err
	}
	// The listener outlives ctx, which bounds only the listen.
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stopListen := context.AfterFunc(ctx, cancel)
	resp, err := s.roundTrip(lctx, c, proto.PathEgress, "", http.NoBody)
	if !stopListen() && err == nil {
		resp.Body.Close()
		err = ctx.Err()
	}
	if err != nil {
		cancel()
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		err := replyError(resp, nil)
		cancel()
		return nil, c.errorf("%w", err)
	}
	l := &egressListener{c: c, s: s, cancel: cancel, body: resp.Body, events: bufio.NewReaderSize(resp.Body, proto.MaxEgressEvent)}
	first, err := l.next()
	if err != nil || first.Port < 1 || first.Port > 65535 || first.Listener == 0 {
		l.Close()
		if err == nil {
			err = fmt.Errorf("bad first event %+v", first)
		}
		return nil, c.errorf("listen in the target: %w", err)
	}
	l.id, l.port = first.Listener, first.Port
	return l, nil
}

// egressListener is a listener on the target's loopback.
type egressListener struct {
	c      *conn
	s      *session
	cancel context.CancelFunc
	body   io.ReadCloser
	events *bufio.Reader
	id     int64
	port   int

	mu     sync.Mutex // serialises Accept's reads
	once   sync.Once
	closed atomic.Bool
}

// next reads one event line (at most proto.MaxEgressEvent bytes).
func (l *egressListener) next() (proto.EgressEvent, error) {
	var ev proto.EgressEvent
	line, err := l.events.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return ev, fmt.Errorf("an event over %d bytes", proto.MaxEgressEvent)
		}
		return ev, err
	}
	if err := json.Unmarshal(line, &ev); err != nil {
		return ev, fmt.Errorf("bad event: %w", err)
	}
	return ev, nil
}

// Accept waits for the next connection in the target and claims it.
func (l *egressListener) Accept() (net.Conn, error) {
	for {
		l.mu.Lock()
		ev, err := l.next()
		l.mu.Unlock()
		if err != nil {
			if l.isClosed() {
				return nil, net.ErrClosed
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || !l.s.alive() {
				return nil, l.c.errorf("listener on the target's 127.0.0.1:%d: %w: the helper's session ended", l.port, ops.ErrTransport)
			}
			return nil, l.c.errorf("listener on the target's 127.0.0.1:%d: %w", l.port, err)
		}
		if ev.Conn == 0 {
			continue
		}
		c, err := l.claim(ev.Conn)
		if err != nil {
			if l.isClosed() {
				return nil, net.ErrClosed
			}
			// The connection closed before its claim (the helper's
			// timeout), or its stream failed alone: the next one.
			if !errors.Is(err, ops.ErrTransport) || l.s.alive() {
				continue
			}
			return nil, err
		}
		return c, nil
	}
}

// claim opens the stream that carries accepted connection n.
func (l *egressListener) claim(n uint64) (net.Conn, error) {
	if rc, ok, err := l.c.rawDial(context.Background(), fmt.Sprintf("egress %d %d", l.id, n)); ok {
		if err != nil {
			return nil, err
		}
		return rc, nil
	}
	hdr, _ := json.Marshal(proto.EgressConnRequest{Listener: l.id, Conn: n})
	sctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	resp, err := l.s.roundTrip(sctx, l.c, proto.PathEgressConn, string(hdr), pr)
	if err != nil {
		cancel()
		pw.Close()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		err := replyError(resp, nil)
		cancel()
		pw.Close()
		return nil, l.c.errorf("egress connection %d: %w", n, err)
	}
	return &dialConn{body: resp.Body, pw: pw, cancel: cancel, release: func() {}, port: l.port}, nil
}

func (l *egressListener) isClosed() bool { return l.closed.Load() }

// Close ends the listen request: the helper closes the target's listener
// and the connections not yet claimed.
func (l *egressListener) Close() error {
	l.once.Do(func() {
		l.closed.Store(true)
		l.cancel()
		l.body.Close()
	})
	return nil
}

// Addr is the target's address: 127.0.0.1:PORT there.
func (l *egressListener) Addr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: l.port}
}
