package sandbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/local"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
)

// TestEgressLocal: a local sandbox with a network rule gives its commands
// a proxy on this host's loopback that needs the session's credential,
// lets through what the rule names, says it is advisory, and closes with
// the sandbox. With the helper and without it.
func TestEgressLocal(t *testing.T) {
	for _, noHelper := range []bool{false, true} {
		t.Run(map[bool]string{false: "helper", true: "nohelper"}[noHelper], func(t *testing.T) { egressLocal(t, noHelper) })
	}
}

func egressLocal(t *testing.T, noHelper bool) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "from the host") }))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := local.New(ctx, local.Config{WorkDir: t.TempDir(), SpillDir: t.TempDir(), NoHelper: noHelper})
	if err != nil {
		t.Fatal(err)
	}
	rule := srv.Listener.Addr().String()
	sb, err := sandbox.OpenBackend(ctx, b, sandbox.Config{Policy: sandbox.Policy{Network: sandbox.NetworkPolicy{Allow: []string{rule}}}})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			sb.Close()
		}
	}()
	if lim := sb.Info().Limits; !slices.Contains(lim, sandbox.AdvisoryEgress) || !slices.ContainsFunc(lim, func(l string) bool { return strings.Contains(l, rule) }) {
		t.Errorf("Info.Limits %q do not list the rule and the advisory note", lim)
	}
	l, err := sb.NewLoop()
	if err != nil {
		t.Fatal(err)
	}
	r := l.RunBatch(ctx, nil, []loop.ToolCall{{ID: "1", Name: "bash",
		Arguments: json.RawMessage(`{"command":"echo \"$HTTP_PROXY|$https_proxy|$NO_PROXY\""}`)}}, nil).Results[0].Result
	parts := strings.Split(strings.TrimSpace(r.Content[0].Text), "|")
	if len(parts) != 3 || parts[0] != parts[1] || parts[2] != "localhost,127.0.0.1,::1" {
		t.Fatalf("the command's proxy variables: %q", r.Content[0].Text)
	}
	proxy, err := url.Parse(parts[0])
	if err != nil || proxy.User.Username() != "pi-sandbox" || !strings.HasPrefix(proxy.Host, "127.0.0.1:") {
		t.Fatalf("HTTP_PROXY %q: want http://pi-sandbox:TOKEN@127.0.0.1:PORT", parts[0])
	}
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy), DisableKeepAlives: true}}
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "from the host" {
		t.Errorf("through the proxy: %d %q", resp.StatusCode, body)
	}
	// Another user of the host's loopback, without the credential.
	bare := *proxy
	bare.User = nil
	resp, err = (&http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(&bare)}}).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusProxyAuthRequired {
		t.Errorf("without the credential: %d, want 407", resp.StatusCode)
	}
	closed = true
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.Dial("tcp", proxy.Host); err == nil {
		c.Close()
		t.Errorf("the proxy's port %s is open after Close", proxy.Host)
	}
}

// TestEgressNeedsListener: rules on a backend that cannot listen in its
// target fail the open, saying so; a malformed rule is a configuration
// error naming it.
func TestEgressNeedsListener(t *testing.T) {
	ctx := context.Background()
	b, err := local.New(ctx, local.Config{WorkDir: t.TempDir(), SpillDir: t.TempDir(), NoHelper: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = sandbox.OpenBackend(ctx, noListener{b}, sandbox.Config{Unconfined: true, Policy: sandbox.Policy{Network: sandbox.NetworkPolicy{Allow: []string{"github.com"}}}})
	if !errors.Is(err, ops.ErrUnsupported) || !strings.Contains(err.Error(), "egress proxy") {
		t.Errorf("rules without a listener: %v", err)
	}
	b, _ = local.New(ctx, local.Config{WorkDir: t.TempDir(), SpillDir: t.TempDir(), NoHelper: true})
	_, err = sandbox.OpenBackend(ctx, b, sandbox.Config{Policy: sandbox.Policy{Network: sandbox.NetworkPolicy{Allow: []string{"http://github.com"}}}})
	if !errors.Is(err, ops.ErrConfig) || !strings.Contains(err.Error(), `"http://github.com"`) {
		t.Errorf("a malformed rule: %v", err)
	}
}

// noListener hides every optional capability of a backend.
type noListener struct{ ops.Backend }

// TestEgressLocalInject: on the shared loopback inject rules need
// AllowSharedInject; with it a command's plain-HTTP request through the
// proxy reaches the server with the header, the variable the rule names
// is not among the command's environment, and a result that holds the
// value shows it redacted.
func TestEgressLocalInject(t *testing.T) {
	const secret = "tok-inject-4f9a1c"
	t.Setenv("PI_TEST_INJECT_TOKEN", secret)
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Authorization")
		io.WriteString(w, "echo "+r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pol := sandbox.Policy{Network: sandbox.NetworkPolicy{Inject: []sandbox.InjectRule{
		{Host: srv.Listener.Addr().String(), Header: "Authorization", Value: "Bearer ${PI_TEST_INJECT_TOKEN}"}}}}
	b, err := local.New(ctx, local.Config{WorkDir: t.TempDir(), SpillDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = sandbox.OpenBackend(ctx, b, sandbox.Config{Policy: pol})
	if !errors.Is(err, ops.ErrConfig) || !strings.Contains(err.Error(), "--allow-shared-inject") {
		t.Fatalf("inject on local without AllowSharedInject: %v", err)
	}
	pol.Network.AllowSharedInject = true
	b, err = local.New(ctx, local.Config{WorkDir: t.TempDir(), SpillDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := sandbox.OpenBackend(ctx, b, sandbox.Config{Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if lim := strings.Join(sb.Info().Limits, "\n"); !strings.Contains(lim, "(Authorization)") || strings.Contains(lim, secret) {
		t.Errorf("Info.Limits: %q", lim)
	}
	l, err := sb.NewLoop()
	if err != nil {
		t.Fatal(err)
	}
	bash := func(cmd string) string {
		args, _ := json.Marshal(map[string]string{"command": cmd})
		return l.RunBatch(ctx, nil, []loop.ToolCall{{ID: "1", Name: "bash", Arguments: args}}, nil).Results[0].Result.Content[0].Text
	}
	if text := bash(`env | grep -c PI_TEST_INJECT_TOKEN; echo "[$PI_TEST_INJECT_TOKEN]"`); !strings.Contains(text, "0\n[]") {
		t.Errorf("the command's environment holds the variable: %q", text)
	}
	// Go's own client is the command here: curl may be absent.
	proxy := strings.TrimSpace(bash(`echo "$HTTP_PROXY"`))
	u, err := url.Parse(proxy)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u)}}).Get(srv.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if h := <-got; h != "Bearer "+secret || string(body) != "echo Bearer "+secret {
		t.Errorf("the server saw %q, answered %q", h, body)
	}
	// A result that holds the value (the server echoed it into a file).
	if err := os.WriteFile(filepath.Join(b.Info().WorkDir, "echo.txt"), body, 0o644); err != nil {
		t.Fatal(err)
	}
	if text := bash(`cat echo.txt`); strings.Contains(text, secret) || !strings.Contains(text, sandbox.Redacted) {
		t.Errorf("a result with the value: %q", text)
	}
}
