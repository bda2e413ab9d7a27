package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServeHTTPRefusals: the usage errors of serve --http exit 2 with one
// line; an address in use exits 1.
func TestServeHTTPRefusals(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, []byte("\n  \n"), 0o600)
	for _, args := range [][]string{
		{"serve", "--http", "0.0.0.0:0", "--backend", "local"},
		{"serve", "--http", "127.0.0.1:0", "--token-file", empty},
		{"serve", "--http", "127.0.0.1:0", "--token-file", filepath.Join(t.TempDir(), "missing")},
		{"serve", "--max-sessions", "3"},
		{"serve", "--http", "127.0.0.1:0", "--tls-cert", empty},
		{"serve", "--pool", "p"},
		{"serve", "--http", "127.0.0.1:0", "--pool", "p", "--image", "pi-sandbox/busybox"},
		{"serve", "--http", "127.0.0.1:0", "--pool", "p", "--user", "1000:1000"},
		{"serve", "--http", "127.0.0.1:0", "--pool", "p", "--backend", "local"},
		{"serve", "--http", "127.0.0.1:0", "--pool="},
		{"serve", "--http", "127.0.0.1:0", "--no-cold"},
	} {
		code, out, errs := run(t, args...)
		if code != 2 || out != "" || !strings.Contains(errs, "Run 'pi-sandbox serve -h'") {
			t.Errorf("%q: code %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	code, out, errs := run(t, "serve", "--http", ln.Addr().String(), "--backend", "local", "--workdir", t.TempDir())
	if code != 1 || out != "" || !strings.Contains(errs, "address already in use") {
		t.Errorf("address in use: code %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestServeHTTPLocal: serve --http on local prints the URL first, says the
// sessions are not isolated, writes a generated token, gives each session
// its own subdirectory, and at the signal ends the sessions, removes their
// directories and the token file, and exits 0.
func TestServeHTTPLocal(t *testing.T) {
	root := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	errb := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- runMain(ctx, []string{"serve", "--http", "127.0.0.1:0", "--backend", "local", "--workdir", root}, stdio{strings.NewReader(""), pw, errb})
		pw.Close()
	}()
	br := bufio.NewReader(pr)
	url, err := br.ReadString('\n')
	url = strings.TrimSpace(url)
	if err != nil || !regexp.MustCompile(`^http://127\.0\.0\.1:\d+/mcp$`).MatchString(url) {
		t.Fatalf("first line %q, %v (stderr %s)", url, err, errb)
	}
	if !strings.Contains(errb.String(), "sessions are not isolated") {
		t.Errorf("no isolation warning: %s", errb)
	}
	m := regexp.MustCompile(`bearer token is in (\S+)`).FindStringSubmatch(errb.String())
	if m == nil {
		t.Fatalf("no token file on stderr: %s", errb)
	}
	st, err := os.Stat(m[1])
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, %v", st, err)
	}
	tok, _ := os.ReadFile(m[1])
	token := strings.TrimSpace(string(tok))

	resp, err := http.Get(strings.TrimSuffix(url, "/mcp") + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	health, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(health) != "{\"ok\":true,\"sessions\":0}\n" {
		t.Errorf("healthz %q", health)
	}

	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	hc := &http.Client{Transport: headerRT{"Authorization", "Bearer " + token}}
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("connect: %v (stderr %s)", err, errb)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "echo hi > f; pwd"}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %v", res, err)
	}
	dir := strings.TrimSpace(res.Content[0].(*mcp.TextContent).Text)
	if filepath.Dir(dir) != root {
		t.Errorf("the session works in %s, not a subdirectory of %s", dir, root)
	}
	cancel() // as SIGTERM does
	rest, _ := io.ReadAll(br)
	if code := <-done; code != 0 || len(rest) != 0 {
		t.Errorf("exit %d, more stdout %q, stderr %s", code, rest, errb)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the session's directory is left: %v", err)
	}
	if _, err := os.Stat(m[1]); !os.IsNotExist(err) {
		t.Errorf("the token file is left: %v", err)
	}
	if !strings.Contains(errb.String(), "ended (server shutdown)") {
		t.Errorf("stderr: %s", errb)
	}
}

type headerRT struct{ k, v string }

func (h headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.k, h.v)
	return http.DefaultTransport.RoundTrip(r)
}
