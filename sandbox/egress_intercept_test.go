package sandbox

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// interceptFixture is a proxy with an inject rule for an HTTPS server on
// this host, whose certificate its own CA file vouches for.
type interceptFixture struct {
	p      *egressProxy
	u      *url.URL
	srv    *httptest.Server
	caFile string
	lines  func() []EgressEntry
}

// newInterceptFixture starts the server (HTTP/2 and HTTP/1.1; it answers
// with the protocol and the Authorization header it got) and a proxy that
// intercepts it, verifying with roots made of caFiles (nil: the server's
// CA file).
func newInterceptFixture(t *testing.T, caFiles func(serverCA string) []string) *interceptFixture {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s %s auth=%s", r.Proto, r.Host, r.URL.Path, r.Header.Get("Authorization"))
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	caFile := filepath.Join(t.TempDir(), "server-ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := srv.Listener.Addr().String()
	ci, err := compileInject([]InjectRule{{Host: addr, Header: "Authorization", Value: "Bearer ${T}"}}, lookupIn(map[string]string{"T": "tok-https-31337"}))
	if err != nil {
		t.Fatal(err)
	}
	roots, err := upstreamRoots(caFiles(caFile))
	if err != nil {
		t.Fatal(err)
	}
	ca, err := newEgressCA()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := newEgressProxy(ln, ci.allowRules(), "")
	p.inject, p.mitm = ci, &intercepting{ca: ca, roots: roots}
	var mu sync.Mutex
	var lines []EgressEntry
	p.audit = func(e EgressEntry) { mu.Lock(); lines = append(lines, e); mu.Unlock() }
	go p.serve()
	t.Cleanup(p.close)
	return &interceptFixture{p: p, u: &url.URL{Scheme: "http", Host: ln.Addr().String()}, srv: srv, caFile: caFile,
		lines: func() []EgressEntry { mu.Lock(); defer mu.Unlock(); return append([]EgressEntry(nil), lines...) }}
}

// client trusts only the session's CA; h2 chooses whether it offers HTTP/2.
func (f *interceptFixture) client(h2 bool) *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(f.p.mitm.ca.cert)
	tr := &http.Transport{Proxy: http.ProxyURL(f.u), TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: h2}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	return &http.Client{Transport: tr}
}

// TestEgressIntercept: an HTTPS request for an inject rule's host, from a
// client that trusts only the session's CA, reaches the server with the
// header (the client's own replaced), over HTTP/2 and HTTP/1.1 on the
// client's side; several requests share one client connection; the audit
// line counts the bytes and never holds the value.
func TestEgressIntercept(t *testing.T) {
	f := newInterceptFixture(t, func(ca string) []string { return []string{ca} })
	for _, h2 := range []bool{true, false} {
		c := f.client(h2)
		for i := range 3 {
			req, _ := http.NewRequest("GET", f.srv.URL+fmt.Sprintf("/p%d", i), nil)
			req.Header.Set("Authorization", "Bearer from-the-target")
			resp, err := c.Do(req)
			if err != nil {
				t.Fatalf("h2 %v: %v", h2, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := fmt.Sprintf("%s /p%d auth=Bearer tok-https-31337", f.srv.Listener.Addr(), i)
			if resp.StatusCode != 200 || !strings.HasSuffix(string(body), want) {
				t.Errorf("h2 %v: %d %q, want %q", h2, resp.StatusCode, body, want)
			}
			if wantProto := map[bool]int{true: 2, false: 1}[h2]; resp.ProtoMajor != wantProto {
				t.Errorf("h2 %v: the client spoke %s", h2, resp.Proto)
			}
			if iss := resp.TLS.PeerCertificates[0].Issuer.Organization; len(iss) == 0 || iss[0] != "pi-sandbox" {
				t.Errorf("the client saw a certificate issued by %v", iss)
			}
		}
		c.CloseIdleConnections()
	}
	f.p.close()
	lines := f.lines()
	if len(lines) != 2 {
		t.Fatalf("%d audit lines, want one per client connection: %+v", len(lines), lines)
	}
	for _, l := range lines {
		e := l.Egress
		if e.Method != "CONNECT" || !e.Allowed || e.Status != 200 || e.BytesUp == 0 || e.BytesDown == 0 || strings.Contains(fmt.Sprint(l), "tok-https") {
			t.Errorf("audit line %+v", l)
		}
	}
}

// TestEgressInterceptRefusals: an upstream whose certificate the roots do
// not vouch for is the CONNECT's 502 naming the host and why; a TLS server
// name other than the CONNECT host ends the handshake; a request for
// another host on the tunnel is 421.
func TestEgressInterceptRefusals(t *testing.T) {
	bad := newInterceptFixture(t, func(string) []string { return nil })
	addr := bad.srv.Listener.Addr().String()
	status, body := rawConnect(t, bad.u.Host, addr, "")
	if status != 502 || !strings.Contains(body, "pi-sandbox: egress to "+addr+" failed: the server's certificate is not trusted") || !strings.Contains(body, "--egress-ca") {
		t.Errorf("untrusted upstream: %d %q", status, body)
	}

	f := newInterceptFixture(t, func(ca string) []string { return []string{ca} })
	addr = f.srv.Listener.Addr().String()
	c, br := connectConn(t, f.u.Host, addr)
	pool := x509.NewCertPool()
	pool.AddCert(f.p.mitm.ca.cert)
	tc := tls.Client(&bufferedConn{Conn: c, r: br}, &tls.Config{ServerName: "evil.test", RootCAs: pool})
	if err := tc.Handshake(); err == nil {
		t.Error("a handshake for another server name succeeded")
	}
	c.Close()

	req, _ := http.NewRequest("GET", f.srv.URL+"/x", nil)
	req.Host = "other.test"
	resp, err := f.client(true).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest || !strings.Contains(string(b), "one host per tunnel") {
		t.Errorf("another host on the tunnel: %d %q", resp.StatusCode, b)
	}
}

// TestEgressInterceptNotOthers: a CONNECT to a host without an inject rule
// is a tunnel: the client sees the server's own certificate.
func TestEgressInterceptNotOthers(t *testing.T) {
	f := newInterceptFixture(t, func(ca string) []string { return []string{ca} })
	other := httptest.NewTLSServer(http.HandlerFunc(hello))
	defer other.Close()
	rules, _ := compileHostRules([]string{other.Listener.Addr().String()})
	f.p.rules = append(f.p.rules, rules...)
	pool := x509.NewCertPool()
	pool.AddCert(other.Certificate())
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(f.u), TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := c.Get(other.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !resp.TLS.PeerCertificates[0].Equal(other.Certificate()) {
		t.Errorf("the client saw %v, not the server's own certificate", resp.TLS.PeerCertificates[0].Subject)
	}
}

// TestUpstreamRoots: a file that is missing or holds no certificate is a
// configuration error naming it.
func TestUpstreamRoots(t *testing.T) {
	junk := filepath.Join(t.TempDir(), "junk.pem")
	os.WriteFile(junk, []byte("not a certificate"), 0o600)
	for _, f := range []string{junk, filepath.Join(t.TempDir(), "missing.pem")} {
		if _, err := upstreamRoots([]string{f}); err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// connectConn opens a CONNECT tunnel to target through the proxy at
// proxy and returns it after the 200.
func connectConn(t *testing.T, proxy, target string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	return c, br
}
