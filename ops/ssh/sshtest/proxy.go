package sshtest

import (
	"net"
	"strconv"
	"sync"
	"sync/atomic"
)

// Proxy forwards loopback TCP connections to a target and lets a test (or
// the fault bench) break them as a network would: cut at once (Cut), cut
// after a number of further client-to-server bytes (CutAfter, to land in the
// middle of an upload), or freeze them (Freeze: a black hole, connections
// open but nothing passes, until Thaw).
type Proxy struct {
	ln     net.Listener
	target string

	mu       sync.Mutex
	conns    []net.Conn
	frozen   bool
	unfreeze chan struct{}
	// budget counts down client-to-server bytes while armed.
	armed  atomic.Bool
	budget atomic.Int64
}

// StartProxy listens on a free loopback port and forwards to target.
func StartProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, unfreeze: make(chan struct{})}
	go p.serve()
	return p, nil
}

// Addr is the proxy's listening address.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Port is the proxy's listening port.
func (p *Proxy) Port() int {
	_, port, _ := net.SplitHostPort(p.Addr())
	n, _ := strconv.Atoi(port)
	return n
}

// Close stops listening, lets frozen traffic go and cuts every connection.
func (p *Proxy) Close() { p.ln.Close(); p.Thaw(); p.Cut() }

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		go p.pipe(u, c, true)
		go p.pipe(c, u, false)
	}
}

func (p *Proxy) pipe(dst, src net.Conn, upstream bool) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if upstream && p.armed.Load() && p.budget.Add(-int64(n)) <= 0 {
				p.armed.Store(false)
				p.Cut()
				return
			}
			p.mu.Lock()
			frozen, ch := p.frozen, p.unfreeze
			p.mu.Unlock()
			if frozen {
				<-ch // hold the bytes; TCP back-pressure does the rest
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Cut closes every connection made so far.
func (p *Proxy) Cut() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// CutAfter cuts every connection once n more client-to-server bytes passed.
func (p *Proxy) CutAfter(n int64) {
	p.budget.Store(n)
	p.armed.Store(true)
}

// Freeze stops all traffic on the connections made so far; new connections
// made while frozen are frozen too until Thaw.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	p.frozen = true
	p.mu.Unlock()
}

// Thaw lets traffic pass again.
func (p *Proxy) Thaw() {
	p.mu.Lock()
	if p.frozen {
		p.frozen = false
		close(p.unfreeze)
		p.unfreeze = make(chan struct{})
	}
	p.mu.Unlock()
}
