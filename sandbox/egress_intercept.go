package sandbox

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"time"

	"github.com/pi-sandbox/pi-sandbox/internal/oneconn"
)

// Bounds of an intercepted tunnel, besides the proxy's own.
const (
	egressHandshakeTimeout = 10 * time.Second // each TLS handshake, either side
	egressIdleTimeout      = 2 * time.Minute  // a client's kept-alive connection with no request
	egressUpstreamConns    = 8                // upstream connections of one client connection
)

// intercepting is the part of the proxy that terminates TLS for the hosts
// of inject rules: the session's CA and the roots upstreams are verified
// with.
type intercepting struct {
	ca    *egressCA
	roots *x509.CertPool
}

// intercepts reports whether a CONNECT to host:port is terminated here
// (an inject rule names it) rather than tunnelled.
func (p *egressProxy) intercepts(host string, port int) bool {
	if p.mitm == nil || p.inject == nil {
		return false
	}
	name, ip := normHost(host)
	for _, r := range p.inject.rules {
		if r.host.matches(name, ip, port) {
			return true
		}
	}
	return false
}

// intercept serves a CONNECT to an inject rule's host: it verifies the
// upstream's certificate over up (a failure is the CONNECT's 502), answers
// 200, terminates the client's TLS with the session's certificate for
// host, and serves its requests (HTTP/1.1 or HTTP/2) by sending each on
// to the upstream over HTTPS with the rule's headers. It returns the
// status and the reason for the audit line, and adds the bytes of every
// upstream connection it opened to up's counts.
func (p *egressProxy) intercept(c net.Conn, br *bufio.Reader, up *countConn, host string, port int) (int, string) {
	name, ip := normHost(host)
	hp := hostPort(host, port)
	first, err := p.upstreamTLS(up, name)
	if err != nil {
		msg := fmt.Sprintf("pi-sandbox: egress to %s failed: %s", hp, err)
		writeAnswer(c, http.StatusBadGateway, msg)
		return http.StatusBadGateway, msg
	}
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return http.StatusOK, ""
	}
	client := tls.Server(&bufferedConn{Conn: c, r: br}, &tls.Config{
		NextProtos: []string{"h2", "http/1.1"},
		GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			if h.ServerName != "" && !strings.EqualFold(strings.TrimSuffix(h.ServerName, "."), name) {
				return nil, fmt.Errorf("the TLS server name %q is not the CONNECT host %s", h.ServerName, host)
			}
			return nil, nil
		},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return p.mitm.ca.leaf(name) },
	})
	hctx, cancel := context.WithTimeout(context.Background(), egressHandshakeTimeout)
	err = client.HandshakeContext(hctx)
	cancel()
	if err != nil {
		first.Close()
		return http.StatusOK, "tls: " + err.Error()
	}

	// The upstream connections of this client connection: the first,
	// already verified, then new ones checked and dialed as any other.
	var mu sync.Mutex
	conns := []net.Conn{first}
	counts := []*countConn{}
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		mu.Lock()
		if first != nil {
			c := first
			first = nil
			mu.Unlock()
			return c, nil
		}
		mu.Unlock()
		raw, _, msg := p.connect(host, port)
		if raw == nil {
			return nil, errors.New(strings.TrimPrefix(msg, "pi-sandbox: "))
		}
		cc := &countConn{Conn: raw}
		tc, err := p.upstreamTLS(cc, name)
		if err != nil {
			return nil, fmt.Errorf("egress to %s failed: %w", hp, err)
		}
		mu.Lock()
		conns, counts = append(conns, tc), append(counts, cc)
		mu.Unlock()
		return tc, nil
	}
	tr := &http.Transport{
		DialTLSContext:    dial,
		ForceAttemptHTTP2: true,
		MaxConnsPerHost:   egressUpstreamConns,
		IdleConnTimeout:   egressIdleTimeout,
		// The client's own Accept-Encoding goes through as it is.
		DisableCompression: true,
	}
	defer func() {
		tr.CloseIdleConnections()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		for _, cc := range counts {
			up.in.Add(cc.in.Load())
			up.out.Add(cc.out.Load())
		}
		mu.Unlock()
	}()
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "https", hp
			pr.Out.Host = pr.In.Host
			for _, h := range []string{"Proxy-Authorization", "Proxy-Connection"} {
				pr.Out.Header.Del(h)
			}
			p.inject.apply(pr.Out.Header, name, ip, port)
		},
		Transport:     tr,
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return // the client went away
			}
			http.Error(w, fmt.Sprintf("pi-sandbox: egress to %s failed: %s", hp, err), http.StatusBadGateway)
		},
	}
	var handlers sync.WaitGroup
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handlers.Add(1)
		defer handlers.Done()
		if h, _ := normHost(hostOnly(r.Host)); h != name {
			http.Error(w, fmt.Sprintf("pi-sandbox: egress proxy: a request for %s on the tunnel to %s (one host per tunnel)", r.Host, hp), http.StatusMisdirectedRequest)
			return
		}
		rp.ServeHTTP(w, r)
	})
	serveOne(client, handler)
	handlers.Wait()
	return http.StatusOK, ""
}

// upstreamTLS is the client side of TLS to an intercepted host over raw,
// verified with the proxy's roots for name; a failure closes raw and says
// why in the model's words.
func (p *egressProxy) upstreamTLS(raw net.Conn, name string) (*tls.Conn, error) {
	tc := tls.Client(raw, &tls.Config{ServerName: name, RootCAs: p.mitm.roots, NextProtos: []string{"h2", "http/1.1"}})
	ctx, cancel := context.WithTimeout(context.Background(), egressHandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		raw.Close()
		var uae x509.UnknownAuthorityError
		var hne x509.HostnameError
		var cie x509.CertificateInvalidError
		switch {
		case errors.As(err, &uae), errors.As(err, &hne), errors.As(err, &cie):
			return nil, fmt.Errorf("the server's certificate is not trusted (%s); a private CA is added with --egress-ca FILE", tlsReason(err))
		case errors.Is(err, context.DeadlineExceeded):
			return nil, errors.New("the TLS handshake timed out")
		}
		return nil, fmt.Errorf("the TLS handshake: %s", tlsReason(err))
	}
	return tc, nil
}

// tlsReason is err without Go's "tls: " and "x509: " prefixes' noise.
func tlsReason(err error) string {
	var ve *tls.CertificateVerificationError
	if errors.As(err, &ve) {
		err = ve.Err
	}
	return err.Error()
}

// hostOnly is a request's Host without its port.
func hostOnly(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		return host
	}
	return h
}

// serveOne serves HTTP on the one connection c until it closes.
func serveOne(c net.Conn, h http.Handler) {
	l := oneconn.New(c)
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: egressHeadTimeout,
		IdleTimeout:       egressIdleTimeout,
		MaxHeaderBytes:    egressHeadMax,
		ErrorLog:          log.New(io.Discard, "", 0),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateClosed || s == http.StateHijacked {
				l.Close()
			}
		},
	}
	srv.Serve(l)
}

// bufferedConn reads through r (which holds what the proxy read ahead).
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }
