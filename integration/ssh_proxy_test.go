package integration

import (
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
)

// tcpProxy forwards loopback TCP connections to a target and lets a test
// cut them (as a network failure would) or freeze them (a black hole: the
// connections stay open but nothing passes).
type tcpProxy struct {
	ln     net.Listener
	target string

	mu       sync.Mutex
	conns    []net.Conn
	frozen   bool
	unfreeze chan struct{}
}

func startProxy(t testing.TB, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target, unfreeze: make(chan struct{})}
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.Thaw(); p.Cut() })
	return p
}

func (p *tcpProxy) Addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) Port() int {
	_, port, _ := net.SplitHostPort(p.Addr())
	n, _ := strconv.Atoi(port)
	return n
}

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
		go p.pipe(c, u)
		go p.pipe(u, c)
	}
}

func (p *tcpProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
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
			if err != io.EOF {
				return
			}
			return
		}
	}
}

// Cut closes every connection made so far.
func (p *tcpProxy) Cut() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// Freeze stops all traffic on the connections made so far; new
// connections made while frozen are frozen too until Thaw.
func (p *tcpProxy) Freeze() {
	p.mu.Lock()
	p.frozen = true
	p.mu.Unlock()
}

// Thaw lets traffic pass again.
func (p *tcpProxy) Thaw() {
	p.mu.Lock()
	if p.frozen {
		p.frozen = false
		close(p.unfreeze)
		p.unfreeze = make(chan struct{})
	}
	p.mu.Unlock()
}
