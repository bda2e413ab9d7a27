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
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// testProxy serves a proxy with rules on a listener of this host (the
// target's loopback of a local sandbox) and returns it, its URL and the
// audit lines it wrote. Names resolve through names (others fail).
func testProxy(t *testing.T, rules []string, token string, names map[string]string) (*egressProxy, *url.URL, func() []EgressEntry) {
	t.Helper()
	rs, err := compileHostRules(rules)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := newEgressProxy(ln, rs, token)
	p.lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
		if a, ok := names[host]; ok {
			return []netip.Addr{netip.MustParseAddr(a)}, nil
		}
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var mu sync.Mutex
	var lines []EgressEntry
	p.audit = func(e EgressEntry) { mu.Lock(); lines = append(lines, e); mu.Unlock() }
	go p.serve()
	t.Cleanup(p.close)
	u := &url.URL{Scheme: "http", Host: ln.Addr().String()}
	if token != "" {
		u.User = url.UserPassword(egressUser, token)
	}
	return p, u, func() []EgressEntry { mu.Lock(); defer mu.Unlock(); return append([]EgressEntry(nil), lines...) }
}

func proxyClient(u *url.URL) *http.Client {
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u), DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func hello(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "hello %s", r.Host) }

func TestEgressProxyHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(hello))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	ps := strconv.Itoa(port)
	p, u, audit := testProxy(t, []string{"127.0.0.1:" + ps, "localhost:" + ps, "metadata.test", "gone.test"},
		"", map[string]string{"metadata.test": "169.254.169.254", "localhost": "127.0.0.1"})
	c := proxyClient(u)

	if code, body := get(t, c, srv.URL+"/x"); code != 200 || body != "hello 127.0.0.1:"+ps {
		t.Errorf("allowed: %d %q", code, body)
	}
	other, _ := net.Listen("tcp", "127.0.0.1:0")
	defer other.Close()
	op := other.Addr().(*net.TCPAddr).Port
	code, body := get(t, c, fmt.Sprintf("http://127.0.0.1:%d/", op))
	want := fmt.Sprintf("pi-sandbox: egress to 127.0.0.1:%d denied by policy (allowed: 127.0.0.1:%s, localhost:%s, metadata.test, gone.test)\n", op, ps, ps)
	if code != 403 || body != want {
		t.Errorf("no rule: %d %q, want 403 %q", code, body, want)
	}
	// A rule naming the name alone does not allow its loopback address
	// (above, the IP rule did).
	_, u2, _ := testProxy(t, []string{"localhost:" + ps}, "", map[string]string{"localhost": "127.0.0.1"})
	code, body = get(t, proxyClient(u2), "http://localhost:"+ps+"/")
	if code != 403 || !strings.Contains(body, "localhost resolves to 127.0.0.1 is a loopback address") {
		t.Errorf("a name resolving to loopback: %d %q", code, body)
	}
	if code, body := get(t, c, "http://localhost:"+ps+"/"); code != 200 || body != "hello localhost:"+ps {
		t.Errorf("a name resolving to an IP a rule names: %d %q", code, body)
	}
	code, body = get(t, c, "http://metadata.test/latest/meta-data/")
	if code != 403 || !strings.Contains(body, "169.254.169.254 is a link-local (cloud metadata) address") {
		t.Errorf("a name resolving to the metadata address: %d %q", code, body)
	}
	code, body = get(t, c, "http://169.254.169.254/latest/meta-data/")
	if code != 403 || !strings.HasPrefix(body, "pi-sandbox: egress to 169.254.169.254:80 denied by policy (allowed: ") {
		t.Errorf("the metadata address: %d %q", code, body)
	}
	code, body = get(t, c, "http://gone.test/")
	if code != 502 || body != "pi-sandbox: egress to gone.test:80 failed: cannot resolve gone.test: no such host\n" {
		t.Errorf("no such host: %d %q", code, body)
	}
	p.close() // every line written
	lines := audit()
	if len(lines) != 6 {
		t.Fatalf("%d audit lines, want 6: %+v", len(lines), lines)
	}
	for _, l := range lines {
		switch e := l.Egress; {
		case e.Host == "127.0.0.1" && e.Port == port:
			if !e.Allowed || e.Status != 200 || e.BytesUp == 0 || e.BytesDown == 0 || e.Method != "GET" {
				t.Errorf("audit of the allowed request: %+v", e)
			}
		case e.Host == "127.0.0.1" && e.Port == op:
			if e.Allowed || e.Status != 403 || !strings.Contains(e.Reason, "denied by policy") {
				t.Errorf("audit of the refusal: %+v", e)
			}
		}
	}
}

func TestEgressProxyConnect(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(hello))
	defer srv.Close()
	ps := strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
	p, u, audit := testProxy(t, []string{"127.0.0.1:" + ps, "tls.test:" + ps}, "", map[string]string{"tls.test": "127.0.0.1"})
	c := proxyClient(u)
	// No SNI (an IP literal), then the SNI of the CONNECT host.
	if code, body := get(t, c, srv.URL+"/"); code != 200 || !strings.HasPrefix(body, "hello") {
		t.Errorf("CONNECT to an allowed IP: %d %q", code, body)
	}
	if code, body := get(t, c, "https://tls.test:"+ps+"/"); code != 200 || body != "hello tls.test:"+ps {
		t.Errorf("CONNECT with its own SNI: %d %q", code, body)
	}
	// Another SNI than the CONNECT host: the handshake is refused.
	pc, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	fmt.Fprintf(pc, "CONNECT tls.test:%s HTTP/1.1\r\nHost: tls.test:%s\r\n\r\n", ps, ps)
	br := bufio.NewReader(pc)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	tc := tls.Client(&bufferedConn{Conn: pc, r: br}, &tls.Config{ServerName: "evil.example", InsecureSkipVerify: true})
	if err := tc.Handshake(); err == nil || !strings.Contains(err.Error(), "access denied") {
		t.Errorf("a handshake with another SNI: %v, want the access_denied alert", err)
	}
	pc.Close()
	// A CONNECT the rules refuse is a 403 before any tunnel.
	code, body := rawConnect(t, u.Host, "example.com:443", "")
	if code != 403 || !strings.HasPrefix(body, "pi-sandbox: egress to example.com:443 denied by policy") {
		t.Errorf("a refused CONNECT: %d %q", code, body)
	}
	p.close() // every line written
	if !slices.ContainsFunc(audit(), func(l EgressEntry) bool {
		return !l.Egress.Allowed && strings.Contains(l.Egress.Reason, `"evil.example" is not the CONNECT host tls.test`)
	}) {
		t.Errorf("no audit line of the SNI mismatch: %+v", audit())
	}
}

// rawConnect sends one CONNECT and returns the answer's status and body.
func rawConnect(t *testing.T, proxy, target, extra string) (int, string) {
	t.Helper()
	pc, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	fmt.Fprintf(pc, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", target, target, extra)
	resp, err := http.ReadResponse(bufio.NewReader(pc), &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestEgressProxyCredential(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(hello))
	defer srv.Close()
	_, u, _ := testProxy(t, []string{srv.Listener.Addr().String()}, "s3cret", nil)
	if code, _ := get(t, proxyClient(u), srv.URL); code != 200 {
		t.Errorf("with the credential: %d", code)
	}
	bare := *u
	bare.User = nil
	if code, body := get(t, proxyClient(&bare), srv.URL); code != 407 || !strings.Contains(body, "credential") {
		t.Errorf("without the credential: %d %q", code, body)
	}
	bare.User = url.UserPassword(egressUser, "wrong")
	if code, _ := get(t, proxyClient(&bare), srv.URL); code != 407 {
		t.Errorf("with a wrong credential: %d", code)
	}
}

// TestEgressProxyLimitAndClose: a connection over the limit is answered
// 503 at once; close ends the open tunnels.
func TestEgressProxyLimitAndClose(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go io.Copy(c, c)
		}
	}()
	p, u, _ := testProxy(t, []string{up.Addr().String()}, "", nil)
	p.mu.Lock()
	p.max = 1
	p.mu.Unlock()
	held, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	fmt.Fprintf(held, "CONNECT %s HTTP/1.1\r\n\r\nping", up.Addr())
	br := bufio.NewReader(held)
	if resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect}); err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	echo := make([]byte, 4)
	if _, err := io.ReadFull(br, echo); err != nil || string(echo) != "ping" {
		t.Fatalf("tunnel echo %q %v", echo, err)
	}
	code, body := rawConnect(t, u.Host, up.Addr().String(), "")
	if code != 503 || body != "pi-sandbox: egress refused: 1 connections of this session are open, the most allowed\n" {
		t.Errorf("over the limit: %d %q", code, body)
	}
	p.close()
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) && err == nil {
		t.Errorf("the tunnel is still open after close")
	}
}
