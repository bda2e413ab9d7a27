// Package oneconn is a net.Listener of one connection, for serving HTTP
// on a connection that is already open (a helper's stdio, an intercepted
// TLS connection).
package oneconn

import (
	"net"
	"sync"
)

// Listener hands out its connection once; Accept then blocks until Close
// and fails with net.ErrClosed.
type Listener struct {
	mu   sync.Mutex
	conn net.Conn
	addr net.Addr
	done chan struct{}
	once sync.Once
}

// New returns the listener of c.
func New(c net.Conn) *Listener {
	return &Listener{conn: c, addr: c.LocalAddr(), done: make(chan struct{})}
}

func (l *Listener) Accept() (net.Conn, error) {
	l.mu.Lock()
	c := l.conn
	l.conn = nil
	l.mu.Unlock()
	if c != nil {
		return c, nil
	}
	<-l.done
	return nil, net.ErrClosed
}

// Close ends a blocked Accept (the connection handed out is the server's).
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *Listener) Addr() net.Addr { return l.addr }
