package sandbox

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// tunnel relays a CONNECT tunnel between the client c (its bytes read
// through br) and up. When the client's first bytes are a TLS handshake,
// its ClientHello is read before anything is sent on: a server name (SNI)
// other than host ends the tunnel with a TLS alert, and the reason is
// returned.
func (p *egressProxy) tunnel(c net.Conn, br *bufio.Reader, up *countConn, host string) string {
	done := make(chan string, 1)
	go func() {
		reason := ""
		defer func() { done <- reason }()
		first, err := br.Peek(1)
		if err != nil {
			up.CloseWrite()
			return
		}
		var src io.Reader = br
		if first[0] == 0x16 { // a TLS handshake record
			hello, sni, err := readClientHello(c, br)
			if err != nil {
				reason = "tls: " + err.Error()
				c.Close()
				up.Close()
				return
			}
			if sni != "" && !strings.EqualFold(strings.TrimSuffix(sni, "."), host) {
				reason = fmt.Sprintf("the TLS server name %q is not the CONNECT host %s", sni, host)
				c.Write(tlsAccessDenied)
				c.Close()
				up.Close()
				return
			}
			src = io.MultiReader(strings.NewReader(string(hello)), br)
		}
		if _, err := io.Copy(up, src); err != nil {
			up.Close()
			return
		}
		up.CloseWrite()
	}()
	_, err := io.Copy(c, up)
	if cw, ok := c.(interface{ CloseWrite() error }); ok && err == nil {
		cw.CloseWrite()
	} else {
		c.Close()
	}
	reason := <-done
	return reason
}

// tlsAccessDenied is a fatal TLS alert, access_denied.
var tlsAccessDenied = []byte{0x15, 0x03, 0x01, 0x00, 0x02, 0x02, 0x31}

// errHelloRead stops the handshake once the ClientHello is parsed.
var errHelloRead = errors.New("hello read")

// readClientHello reads the client's TLS ClientHello from br (within
// egressHelloTimeout and egressHeadMax bytes) with crypto/tls's own
// parser, and returns the bytes read and the server name it asks for.
func readClientHello(c net.Conn, br *bufio.Reader) ([]byte, string, error) {
	rec := &recordConn{r: io.LimitReader(br, egressHeadMax)}
	var sni string
	srv := tls.Server(rec, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		sni = h.ServerName
		return nil, errHelloRead
	}})
	timer := time.AfterFunc(egressHelloTimeout, func() { c.Close() })
	defer timer.Stop()
	err := srv.HandshakeContext(context.Background())
	if !errors.Is(err, errHelloRead) {
		if err == nil {
			err = errors.New("no ClientHello")
		}
		return nil, "", fmt.Errorf("reading the ClientHello: %w", err)
	}
	return rec.buf, sni, nil
}

// recordConn is a read-only net.Conn that keeps what was read; writes
// (the TLS server's alert) go nowhere.
type recordConn struct {
	net.Conn
	r   io.Reader
	buf []byte
}

func (r *recordConn) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.buf = append(r.buf, p[:n]...)
	return n, err
}

func (r *recordConn) Write(p []byte) (int, error)        { return len(p), nil }
func (r *recordConn) Close() error                       { return nil }
func (r *recordConn) SetDeadline(t time.Time) error      { return nil }
func (r *recordConn) SetReadDeadline(t time.Time) error  { return nil }
func (r *recordConn) SetWriteDeadline(t time.Time) error { return nil }
func (r *recordConn) LocalAddr() net.Addr                { return &net.TCPAddr{} }
func (r *recordConn) RemoteAddr() net.Addr               { return &net.TCPAddr{} }

// forward sends one absolute-form request to up in origin form and its
// response back to the client; both sides close after it (each request
// on a new connection is checked again). It returns the status and the
// reason of a failure.
func (p *egressProxy) forward(c net.Conn, req *http.Request, up *countConn, host string, port int) (int, string) {
	rewriteRequest(req)
	name, ip := normHost(host)
	p.inject.apply(req.Header, name, ip, port)
	req.Close = true
	werr := make(chan error, 1)
	go func() { werr <- req.Write(up) }()
	br := bufio.NewReader(up)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		msg := fmt.Sprintf("pi-sandbox: egress to %s failed: the server's answer: %s", hostPort(host, port), err)
		if werr := <-werr; werr != nil {
			msg = fmt.Sprintf("pi-sandbox: egress to %s failed: sending the request: %s", hostPort(host, port), werr)
		}
		writeAnswer(c, http.StatusBadGateway, msg)
		return http.StatusBadGateway, msg
	}
	defer resp.Body.Close()
	resp.Close = true
	if spliceBody(c, req, resp, br, up) {
		up.Close()
		<-werr
		return resp.StatusCode, ""
	}
	if err := resp.Write(c); err != nil {
		up.Close()
	}
	up.Close()
	<-werr
	return resp.StatusCode, ""
}

// rewriteRequest makes a proxied request the origin's: the proxy's own
// and hop-by-hop headers are dropped.
func rewriteRequest(req *http.Request) {
	for _, f := range req.Header.Values("Connection") {
		for _, name := range strings.Split(f, ",") {
			req.Header.Del(strings.TrimSpace(name))
		}
	}
	for _, h := range []string{"Proxy-Authorization", "Proxy-Connection", "Connection", "Keep-Alive", "Te", "Trailer", "Upgrade"} {
		req.Header.Del(h)
	}
	req.RequestURI = ""
}
