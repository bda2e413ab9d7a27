package shim

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

// egressClaimTimeout closes an accepted connection its client has not
// claimed by then.
const egressClaimTimeout = 15 * time.Second

// egressListenerIDs numbers the listeners of every session of this process.
var egressListenerIDs atomic.Int64

// egressState holds a session's egress listeners and the connections they
// accepted that wait for the client.
type egressState struct {
	mu        sync.Mutex
	listeners map[int64]*egressListener
}

type egressListener struct {
	ln      net.Listener
	next    uint64
	pending map[uint64]*pendingConn
}

type pendingConn struct {
	c     net.Conn
	timer *time.Timer
}

func (e *egressState) routes(m *http.ServeMux, s *server) {
	m.HandleFunc("POST "+proto.PathEgress, s.handleEgress)
	m.HandleFunc("POST "+proto.PathEgressConn, s.handleEgressConn)
}

// handleEgress listens on 127.0.0.1:0 and tells the client each accepted
// connection, until the request ends; then the listener and the
// connections still unclaimed close.
func (s *server) handleEgress(w http.ResponseWriter, r *http.Request) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		replyErr(w, fmt.Errorf("shim: egress: listen: %w", unwrapOp(err)))
		return
	}
	e := &s.egress
	id := egressListenerIDs.Add(1)
	l := &egressListener{ln: ln, pending: map[uint64]*pendingConn{}}
	e.mu.Lock()
	if e.listeners == nil {
		e.listeners = map[int64]*egressListener{}
	}
	e.listeners[id] = l
	e.mu.Unlock()
	egressStates.Store(id, e)
	defer func() {
		egressStates.Delete(id)
		ln.Close()
		e.mu.Lock()
		delete(e.listeners, id)
		for _, p := range l.pending {
			p.timer.Stop()
			p.c.Close()
		}
		l.pending = nil
		e.mu.Unlock()
	}()

	accepted := make(chan uint64, proto.EgressMaxPending)
	acceptErr := make(chan struct{})
	done := make(chan struct{})
	defer close(done)
	go func() {
		defer close(acceptErr)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			e.mu.Lock()
			if l.pending == nil || len(l.pending) >= proto.EgressMaxPending {
				e.mu.Unlock()
				c.Close()
				continue
			}
			l.next++
			n := l.next
			l.pending[n] = &pendingConn{c: c, timer: time.AfterFunc(egressClaimTimeout, func() {
				if p := e.take(id, n); p != nil {
					p.c.Close()
				}
			})}
			e.mu.Unlock()
			select {
			case accepted <- n:
			case <-done: // the deferred cleanup closes it
			}
		}
	}()

	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	if enc.Encode(proto.EgressEvent{Listener: id, Port: ln.Addr().(*net.TCPAddr).Port}) != nil || rc.Flush() != nil {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-acceptErr:
			return
		case n := <-accepted:
			if enc.Encode(proto.EgressEvent{Conn: n}) != nil || rc.Flush() != nil {
				return
			}
		}
	}
}

// take removes and returns a pending connection, nil when there is none.
func (e *egressState) take(listener int64, n uint64) *pendingConn {
	e.mu.Lock()
	defer e.mu.Unlock()
	l := e.listeners[listener]
	if l == nil {
		return nil
	}
	p := l.pending[n]
	if p == nil {
		return nil
	}
	delete(l.pending, n)
	p.timer.Stop()
	return p
}

// handleEgressConn relays an accepted connection's bytes both ways.
func (s *server) handleEgressConn(w http.ResponseWriter, r *http.Request) {
	var req proto.EgressConnRequest
	if err := json.Unmarshal([]byte(r.Header.Get(proto.HeaderRequest)), &req); err != nil {
		replyErr(w, fmt.Errorf("shim: bad request: %w", err))
		return
	}
	p := s.egress.take(req.Listener, req.Conn)
	if p == nil {
		replyErr(w, fmt.Errorf("shim: egress: no connection %d waiting on listener %d (closed, or claimed already)", req.Conn, req.Listener))
		return
	}
	relayConn(w, r, p.c)
}
