package sandbox

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

func lookupIn(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestCompileInject(t *testing.T) {
	env := lookupIn(map[string]string{"TOKEN": "s3cr3t-value", "U": "me"})
	ci, err := compileInject([]InjectRule{
		{Host: "api.example.com", Header: "authorization", Value: "Bearer ${TOKEN}"},
		{Host: "*.corp.test:8080", Header: "X-User", Value: "${U}-${U}"},
		{Host: "10.1.2.3", Header: "X-Plain", Value: "a $literal"},
	}, env)
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{ci.rules[0].header, ci.rules[0].value, ci.rules[1].value, ci.rules[2].value}; !slices.Equal(got, []string{"Authorization", "Bearer s3cr3t-value", "me-me", "a $literal"}) {
		t.Errorf("compiled: %q", got)
	}
	if !slices.Equal(ci.names, []string{"TOKEN", "U"}) {
		t.Errorf("names %q", ci.names)
	}
	if !slices.Contains(ci.secrets, "s3cr3t-value") || !slices.Contains(ci.secrets, "Bearer s3cr3t-value") {
		t.Errorf("secrets %q", ci.secrets)
	}
	if s := ci.String(); s != "api.example.com (Authorization), *.corp.test:8080 (X-User), 10.1.2.3 (X-Plain)" || strings.Contains(s, "s3cr3t") {
		t.Errorf("String %q", s)
	}
	for _, c := range []struct {
		rule InjectRule
		want string
	}{
		{InjectRule{Host: "api.example.com", Header: "Authorization", Value: "Bearer ${MISSING}"}, "${MISSING}, which is not set on this host"},
		{InjectRule{Host: "https://api.example.com", Header: "Authorization", Value: "x"}, "not a URL"},
		{InjectRule{Host: "api.example.com", Header: "Bad Header", Value: "x"}, `header "Bad Header" is not a header name`},
		{InjectRule{Host: "api.example.com", Header: "host", Value: "x"}, "header Host belongs to the proxy"},
		{InjectRule{Host: "api.example.com", Header: "X-A", Value: "${1X}"}, "${1X} does not name a variable"},
		{InjectRule{Host: "api.example.com", Header: "X-A", Value: "${TOKEN"}, "unclosed ${"},
		{InjectRule{Host: "api.example.com", Header: "X-A", Value: "a\r\nEvil: 1"}, "line break"},
	} {
		_, err := compileInject([]InjectRule{c.rule}, env)
		if !errors.Is(err, ops.ErrConfig) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "network inject rule for") {
			t.Errorf("%+v: %v, want a configuration error with %q", c.rule, err, c.want)
		}
	}
	// Checking a file reads nothing: an unset variable is no error there.
	if _, err := compileInject([]InjectRule{{Host: "a.test", Header: "X-A", Value: "${MISSING}"}}, nil); err != nil {
		t.Errorf("syntax only: %v", err)
	}
}

// TestEgressProxyInject: a plain-HTTP request for an inject rule's host
// carries the header (replacing the client's own), a request for another
// host does not, and the rule's host is allowed without an allow rule.
func TestEgressProxyInject(t *testing.T) {
	seen := make(chan http.Header, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Clone()
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	// Another host, allowed by its own rule, gets no header.
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Clone()
	}))
	defer other.Close()
	ci, err := compileInject([]InjectRule{{Host: addr, Header: "Authorization", Value: "Bearer ${T}"}}, lookupIn(map[string]string{"T": "tok-123456"}))
	if err != nil {
		t.Fatal(err)
	}
	rules, _ := compileHostRules([]string{other.Listener.Addr().String()})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := newEgressProxy(ln, append(rules, ci.allowRules()...), "")
	p.inject = ci
	var mu sync.Mutex
	var lines []EgressEntry
	p.audit = func(e EgressEntry) { mu.Lock(); lines = append(lines, e); mu.Unlock() }
	go p.serve()
	defer p.close()
	u := &url.URL{Scheme: "http", Host: ln.Addr().String()}

	req, _ := http.NewRequest("GET", srv.URL+"/a", nil)
	req.Header.Set("Authorization", "Bearer from-the-target")
	resp, err := proxyClient(u).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if h := <-seen; h.Get("Authorization") != "Bearer tok-123456" || len(h.Values("Authorization")) != 1 {
		t.Errorf("the server saw Authorization %q", h.Values("Authorization"))
	}
	if code, _ := get(t, proxyClient(u), other.URL); code != 200 {
		t.Fatalf("the other host: %d", code)
	}
	if h := <-seen; h.Get("Authorization") != "" {
		t.Errorf("the other host saw Authorization %q", h.Get("Authorization"))
	}
	p.close()
	mu.Lock()
	defer mu.Unlock()
	if len(lines) != 2 {
		t.Errorf("%d audit lines, want 2", len(lines))
	}
	for _, l := range lines {
		if line := l.Egress.Host + l.Egress.Reason; strings.Contains(line, "tok-123456") {
			t.Errorf("the audit line holds the value: %+v", l)
		}
	}
}
