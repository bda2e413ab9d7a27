package main

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// tcpProxy forwards loopback connections to a target and cuts them on
// demand, as a network failure would: at once (Cut) or after a number of
// further client-to-server bytes (CutAfter), which lands a cut in the middle
// of an upload.
type tcpProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	conns []net.Conn
	// budget counts down client-to-server bytes when armed.
	armed  atomic.Bool
	budget atomic.Int64
}

func startProxy(target string) (*tcpProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &tcpProxy{ln: ln, target: target}
	go p.serve()
	return p, nil
}

func (p *tcpProxy) Addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

func (p *tcpProxy) Close() { p.ln.Close(); p.Cut() }

func (p *tcpProxy) serve() {
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

func (p *tcpProxy) pipe(dst, src net.Conn, upstream bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if upstream && p.armed.Load() && p.budget.Add(-int64(n)) <= 0 {
				p.armed.Store(false)
				p.Cut()
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			if err != io.EOF {
				break
			}
			break
		}
	}
	dst.Close()
	src.Close()
}

// Cut closes every forwarded connection.
func (p *tcpProxy) Cut() {
	p.mu.Lock()
	cs := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range cs {
		c.Close()
	}
}

// CutAfter cuts every connection once n more client-to-server bytes passed.
func (p *tcpProxy) CutAfter(n int64) {
	p.budget.Store(n)
	p.armed.Store(true)
}
