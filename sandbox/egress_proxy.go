package sandbox

import (
	"bufio"
	"context"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Bounds of the egress proxy: nothing the target sends or fails to send
// holds a connection longer, or more memory, than these.
const (
	// DefaultMaxEgressConnections bounds a session's open proxy
	// connections; the next is answered 503.
	DefaultMaxEgressConnections = 256
	egressHeadMax               = 64 << 10 // a request's head
	egressHeadTimeout           = 30 * time.Second
	egressLookupTimeout         = 10 * time.Second
	egressDialTimeout           = 10 * time.Second
	egressHelloTimeout          = 10 * time.Second // a TLS ClientHello, once begun
	egressLinger                = 5 * time.Second  // the client's close after the proxy's
)

// egressProxy is a session's HTTP proxy: it serves the connections the
// target's listener accepts, and decides and dials on this host.
type egressProxy struct {
	rules  egressRules
	ln     net.Listener
	token  string          // the credential a shared loopback needs; "": none
	inject *compiledInject // headers added to requests; nil: none
	mitm   *intercepting   // TLS terminated for inject hosts; nil: every CONNECT is a tunnel
	max    int
	// lookup resolves a name; dial connects to an address already checked.
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	dial   func(ctx context.Context, network, addr string) (net.Conn, error)
	audit  func(EgressEntry) // nil: no audit log

	mu     sync.Mutex
	open   map[net.Conn]net.Conn // a client's connection, its upstream one (or nil)
	closed bool
	wg     sync.WaitGroup
}

// EgressEntry is the audit log line of one proxy connection.
type EgressEntry struct {
	Time   time.Time `json:"time"`
	Egress struct {
		Method     string `json:"method"` // CONNECT, GET ...
		Host       string `json:"host"`
		Port       int    `json:"port"`
		Allowed    bool   `json:"allowed"`
		Status     int    `json:"status"`           // the proxy's answer; 200 for a tunnel
		Reason     string `json:"reason,omitempty"` // why refused or failed
		BytesUp    int64  `json:"bytesUp"`          // the target to the host
		BytesDown  int64  `json:"bytesDown"`        // the host to the target
		DurationMs int64  `json:"durationMs"`
	} `json:"egress"`
}

func newEgressProxy(ln net.Listener, rules egressRules, token string) *egressProxy {
	d := &net.Dialer{Timeout: egressDialTimeout}
	return &egressProxy{
		rules: rules, ln: ln, token: token, max: DefaultMaxEgressConnections,
		lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		},
		dial: d.DialContext,
		open: map[net.Conn]net.Conn{},
	}
}

// serve accepts until the listener fails or close.
func (p *egressProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			return
		}
		over, max := len(p.open) >= p.max, p.max
		if !over {
			p.open[c] = nil
		}
		p.wg.Add(1) // under mu, never after close's Wait began
		p.mu.Unlock()
		go func() {
			defer p.wg.Done()
			if over {
				msg := fmt.Sprintf("pi-sandbox: egress refused: %d connections of this session are open, the most allowed", max)
				writeAnswer(c, http.StatusServiceUnavailable, msg)
				closeGracefully(c)
				return
			}
			defer func() {
				closeGracefully(c)
				p.mu.Lock()
				delete(p.open, c)
				p.mu.Unlock()
			}()
			p.handle(c)
		}()
	}
}

// upstream records c's upstream connection, for close; false when the
// proxy is closed already.
func (p *egressProxy) upstream(c, up net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.open[c] = up
	return true
}

// close closes the listener and every connection, and waits for them.
func (p *egressProxy) close() {
	p.mu.Lock()
	p.closed = true
	p.ln.Close()
	for c, up := range p.open {
		c.Close()
		if up != nil {
			up.Close()
		}
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// handle serves one connection: one CONNECT tunnel or one plain request.
func (p *egressProxy) handle(c net.Conn) {
	start := time.Now()
	var e EgressEntry
	ent := &e.Egress
	defer func() {
		if p.audit != nil && ent.Method != "" {
			e.Time = start.UTC()
			ent.DurationMs = time.Since(start).Milliseconds()
			p.audit(e)
		}
	}()
	// The head is bounded in size and time; the body and tunnel are not.
	lr := &io.LimitedReader{R: c, N: egressHeadMax}
	br := bufio.NewReaderSize(lr, 4<<10)
	timer := time.AfterFunc(egressHeadTimeout, func() { c.Close() })
	req, err := http.ReadRequest(br)
	if !timer.Stop() {
		return
	}
	if err != nil {
		if lr.N <= 0 {
			writeAnswer(c, http.StatusRequestHeaderFieldsTooLarge, fmt.Sprintf("pi-sandbox: egress proxy: a request head over %d bytes", egressHeadMax))
		} else if !errors.Is(err, io.EOF) {
			writeAnswer(c, http.StatusBadRequest, "pi-sandbox: egress proxy: not an HTTP request: "+err.Error())
		}
		return
	}
	lr.N = math.MaxInt64
	if !p.authorized(req) {
		ent.Method, ent.Reason, ent.Status = req.Method, "no proxy credential", http.StatusProxyAuthRequired
		writeAnswer(c, http.StatusProxyAuthRequired, "pi-sandbox: egress proxy: this proxy needs the session's credential (use the HTTP_PROXY the session's commands get)")
		return
	}
	host, port, err := requestTarget(req)
	ent.Method, ent.Host, ent.Port = req.Method, host, port
	if err != nil {
		ent.Status, ent.Reason = http.StatusBadRequest, err.Error()
		writeAnswer(c, http.StatusBadRequest, "pi-sandbox: egress proxy: "+err.Error())
		return
	}
	up, status, msg := p.connect(host, port)
	if up == nil {
		// A failure (502) is of a connection the rules allowed.
		ent.Allowed, ent.Status, ent.Reason = status != http.StatusForbidden, status, msg
		writeAnswer(c, status, msg)
		return
	}
	ent.Allowed = true
	cu := &countConn{Conn: up}
	defer func() { ent.BytesUp, ent.BytesDown = cu.out.Load(), cu.in.Load() }()
	defer up.Close()
	if !p.upstream(c, up) {
		return
	}
	if req.Method == http.MethodConnect && p.intercepts(host, port) {
		ent.Status, ent.Reason = p.intercept(c, br, cu, host, port)
		return
	}
	if req.Method == http.MethodConnect {
		ent.Status = http.StatusOK
		if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return
		}
		if reason := p.tunnel(c, br, cu, host); reason != "" {
			ent.Allowed, ent.Reason = false, reason
		}
		return
	}
	ent.Status, ent.Reason = p.forward(c, req, cu, host, port)
}

// authorized checks the session's credential, where one is needed.
func (p *egressProxy) authorized(req *http.Request) bool {
	if p.token == "" {
		return true
	}
	a, ok := strings.CutPrefix(req.Header.Get("Proxy-Authorization"), "Basic ")
	if !ok {
		return false
	}
	got, err := base64.StdEncoding.DecodeString(strings.TrimSpace(a))
	want := []byte(egressUser + ":" + p.token)
	return err == nil && subtle.ConstantTimeCompare(got, want) == 1
}

// egressUser is the user name of the proxy credential.
const egressUser = "pi-sandbox"

// requestTarget returns the host and port a request asks for: the CONNECT
// authority, or an absolute-form URL's (its Host header is ignored).
func requestTarget(req *http.Request) (string, int, error) {
	if req.Method == http.MethodConnect {
		h, p, err := net.SplitHostPort(req.Host)
		if err != nil {
			return req.Host, 0, fmt.Errorf("CONNECT %s: want HOST:PORT", req.Host)
		}
		port, err := parsePort(p)
		if err != nil {
			return h, 0, fmt.Errorf("CONNECT %s: %w", req.Host, err)
		}
		host, _ := normHost(h)
		return host, port, nil
	}
	if !req.URL.IsAbs() || req.URL.Host == "" {
		return "", 0, fmt.Errorf("%s %s: the proxy takes absolute-form requests (http://HOST/...) and CONNECT", req.Method, req.URL)
	}
	if req.URL.Scheme != "http" {
		return "", 0, fmt.Errorf("%s %s: use CONNECT for %s", req.Method, req.URL.Redacted(), req.URL.Scheme)
	}
	port := 80
	if ps := req.URL.Port(); ps != "" {
		var err error
		if port, err = parsePort(ps); err != nil {
			return "", 0, fmt.Errorf("%s: %w", req.URL.Host, err)
		}
	}
	host, _ := normHost(req.URL.Hostname())
	return host, port, nil
}

// connect decides on host:port and dials the checked address: the
// connection, or the status and sentence of a refusal or failure.
func (p *egressProxy) connect(host string, port int) (net.Conn, int, string) {
	hp := hostPort(host, port)
	name, ip := normHost(host)
	if !p.rules.allows(name, ip, port) {
		return nil, http.StatusForbidden, fmt.Sprintf("pi-sandbox: egress to %s denied by policy (allowed: %s)", hp, p.rules)
	}
	addrs := []netip.Addr{ip}
	if !ip.IsValid() {
		ctx, cancel := context.WithTimeout(context.Background(), egressLookupTimeout)
		found, err := p.lookup(ctx, name)
		cancel()
		if err == nil && len(found) == 0 {
			err = errors.New("no address")
		}
		if err != nil {
			return nil, http.StatusBadGateway, fmt.Sprintf("pi-sandbox: egress to %s failed: cannot resolve %s: %s", hp, name, lookupReason(err))
		}
		addrs = found
	}
	var ok []netip.Addr
	refused := ""
	for _, a := range addrs {
		a = a.Unmap()
		if allowed, what := p.rules.addrAllowed(a, port); allowed {
			ok = append(ok, a)
		} else if refused == "" {
			refused = fmt.Sprintf("%s is %s", a, what)
		}
	}
	if len(ok) == 0 {
		if ip.IsValid() {
			return nil, http.StatusForbidden, fmt.Sprintf("pi-sandbox: egress to %s denied by policy: %s, which only a rule naming that IP with its port allows (allowed: %s)", hp, refused, p.rules)
		}
		return nil, http.StatusForbidden, fmt.Sprintf("pi-sandbox: egress to %s denied by policy: %s resolves to %s, which only a rule naming that IP allows (allowed: %s)", hp, name, refused, p.rules)
	}
	var errs []string
	for _, a := range ok {
		ctx, cancel := context.WithTimeout(context.Background(), egressDialTimeout)
		c, err := p.dial(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
		cancel()
		if err == nil {
			return c, 0, ""
		}
		errs = append(errs, fmt.Sprintf("%s: %s", a, dialReason(err)))
	}
	return nil, http.StatusBadGateway, fmt.Sprintf("pi-sandbox: egress to %s failed: cannot connect (%s)", hp, strings.Join(errs, "; "))
}

func lookupReason(err error) string {
	var de *net.DNSError
	if errors.As(err, &de) {
		if de.IsNotFound {
			return "no such host"
		}
		if de.IsTimeout {
			return "the lookup timed out"
		}
		return de.Err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "the lookup timed out"
	}
	return err.Error()
}

func dialReason(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return strings.TrimPrefix(oe.Err.Error(), "connect: ")
	}
	return err.Error()
}

// writeAnswer writes a complete plain-text answer and ends the exchange.
func writeAnswer(w io.Writer, status int, body string) {
	body += "\n"
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), len(body), body)
}

// closeGracefully ends the proxy's side of c and waits (bounded) for the
// client's before closing: a stream of the helper closed at once could
// drop the answer's last bytes.
func closeGracefully(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
		t := time.AfterFunc(egressLinger, func() { c.Close() })
		io.Copy(io.Discard, io.LimitReader(c, egressHeadMax))
		t.Stop()
	}
	c.Close()
}

// countConn counts the bytes written to (out) and read from (in) a
// connection.
type countConn struct {
	net.Conn
	in, out atomic.Int64
}

func (c *countConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.in.Add(int64(n))
	return n, err
}

func (c *countConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.out.Add(int64(n))
	return n, err
}

func (c *countConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
