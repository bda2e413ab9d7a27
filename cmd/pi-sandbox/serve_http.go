package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pi-sandbox/pi-sandbox/sandbox"
	"github.com/pi-sandbox/pi-sandbox/sandbox/mcpserve"
	"github.com/pi-sandbox/pi-sandbox/sandbox/open"
)

// shutdownWithin bounds the end of every session at SIGINT/SIGTERM.
const shutdownWithin = 9 * time.Second

// httpFlags are serve's flags for --http.
type httpFlags struct {
	addr         string
	maxSessions  int
	idle         time.Duration
	tokenFile    string
	tlsCert      string
	tlsKey       string
	insecureHTTP bool
	replay       sizeFlag
	pool         string
	noCold       bool
}

// httpOnly are the flags that mean something only with --http.
var httpOnly = []string{"max-sessions", "session-idle", "token-file", "tls-cert", "tls-key", "insecure-http", "replay-buffer", "pool", "no-cold"}

func (h *httpFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&h.addr, "http", "", "serve MCP Streamable HTTP on `ADDR` (host:port; port 0 picks one) at /mcp instead of stdio, a sandbox per session")
	fs.IntVar(&h.maxSessions, "max-sessions", mcpserve.DefaultMaxSessions, "with --http: at most `N` sessions open at once (the next initialize gets 503)")
	fs.DurationVar(&h.idle, "session-idle", mcpserve.DefaultSessionIdle, "with --http: end a session after this `DURATION` without a request or a call in progress")
	fs.StringVar(&h.tokenFile, "token-file", "", "with --http: the bearer tokens, one per line, in `FILE` (default: one generated, its file named on stderr)")
	fs.StringVar(&h.tlsCert, "tls-cert", "", "with --http: serve HTTPS with this certificate `FILE` (and --tls-key)")
	fs.StringVar(&h.tlsKey, "tls-key", "", "with --http: the TLS private key `FILE`")
	fs.BoolVar(&h.insecureHTTP, "insecure-http", false, "with --http: allow plain HTTP on an address that is not loopback")
	h.replay = mcpserve.DefaultReplayBytes
	fs.Var(&h.replay, "replay-buffer", "with --http: the `SIZE` of each session's events kept for a client that reconnects")
	fs.StringVar(&h.pool, "pool", "", "with --http: each session claims a member of docker pool `NAME` (pi-sandbox pool fill), removed at the session's end")
	fs.BoolVar(&h.noCold, "no-cold", false, "with --pool: fail a session when no idle member is left instead of starting one cold")
}

// serveHTTP is `pi-sandbox serve --http ADDR`: the MCP endpoint at /mcp,
// a sandbox per session, until a signal.
func serveHTTP(ctx context.Context, f *cmdFlags, hf *httpFlags, io stdio) int {
	host, _, err := net.SplitHostPort(hf.addr)
	if err != nil {
		return f.usageError("--http %q: want HOST:PORT (127.0.0.1:0 picks a port)", hf.addr)
	}
	useTLS := hf.tlsCert != "" || hf.tlsKey != ""
	switch {
	case useTLS && (hf.tlsCert == "" || hf.tlsKey == ""):
		return f.usageError("--tls-cert and --tls-key go together")
	case useTLS && hf.insecureHTTP:
		return f.usageError("--insecure-http and --tls-cert contradict each other")
	case !useTLS && !hf.insecureHTTP && !loopbackHost(host):
		return f.usageError("--http %s is not a loopback address: serve it with --tls-cert and --tls-key, or accept plain HTTP with --insecure-http", hf.addr)
	case hf.maxSessions <= 0:
		return f.usageError("--max-sessions must be at least 1")
	case hf.idle <= 0:
		return f.usageError("--session-idle must be positive")
	case hf.replay <= 0:
		return f.usageError("--replay-buffer must be positive")
	case hf.noCold && hf.pool == "":
		return f.usageError("--no-cold needs --pool")
	}
	var tlsCfg *tls.Config
	if useTLS {
		cert, err := tls.LoadX509KeyPair(hf.tlsCert, hf.tlsKey)
		if err != nil {
			return f.usageError("--tls-cert/--tls-key: %v", err)
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	var newSandbox func(context.Context, string) (*sandbox.Sandbox, error)
	var onEnd func(string)
	if hf.pool != "" {
		var done func()
		var code int
		newSandbox, done, code = poolSandboxes(ctx, f.cfg.Config, hf, io)
		if newSandbox == nil {
			return code
		}
		defer done()
	} else if newSandbox, onEnd, err = sessionSandboxes(f.cfg, io); err != nil {
		return f.usageError("%v", err)
	}
	tokens, tokenFile, code := serveTokens(f, hf, io)
	if tokens == nil {
		return code
	}
	if tokenFile != "" {
		defer os.Remove(tokenFile)
	}
	h, err := mcpserve.New(mcpserve.Options{
		NewSandbox:  newSandbox,
		OnEnd:       onEnd,
		Tokens:      tokens,
		MaxSessions: hf.maxSessions,
		SessionIdle: hf.idle,
		ReplayBytes: int(hf.replay),
		Logf:        func(format string, a ...any) { fmt.Fprintf(io.err, "pi-sandbox serve: "+format+"\n", a...) },
	})
	if err != nil {
		fmt.Fprintf(io.err, "pi-sandbox serve: %v\n", err)
		return 1
	}
	ln, err := net.Listen("tcp", hf.addr)
	if err != nil {
		fmt.Fprintf(io.err, "pi-sandbox serve: %v\n", err)
		return 1
	}
	scheme := "http"
	if tlsCfg != nil {
		scheme = "https"
		ln = tls.NewListener(ln, tlsCfg)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	mux.HandleFunc("GET /healthz", h.Health)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second}
	fmt.Fprintf(io.out, "%s://%s/mcp\n", scheme, ln.Addr())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		fmt.Fprintf(io.err, "pi-sandbox serve: %v\n", err)
		h.Close(context.Background())
		return 1
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownWithin)
	defer cancel()
	code = 0
	if err := h.Close(sctx); err != nil {
		fmt.Fprintf(io.err, "pi-sandbox serve: %v\n", err)
		code = 1
	}
	if srv.Shutdown(sctx) != nil {
		srv.Close()
	}
	return code
}

func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// serveTokens returns the bearer tokens: --token-file's lines, or one
// generated and written to a file named on stderr (generated, removed at
// exit). nil and the exit code when there are none.
func serveTokens(f *cmdFlags, hf *httpFlags, io stdio) (tokens []string, generated string, code int) {
	if hf.tokenFile != "" {
		fh, err := os.Open(hf.tokenFile)
		if err != nil {
			return nil, "", f.usageError("--token-file: %v", err)
		}
		defer fh.Close()
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			if t := strings.TrimSpace(sc.Text()); t != "" {
				tokens = append(tokens, t)
			}
		}
		if err := sc.Err(); err != nil {
			return nil, "", f.usageError("--token-file: %v", err)
		}
		if len(tokens) == 0 {
			return nil, "", f.usageError("--token-file %s holds no token (one per line)", hf.tokenFile)
		}
		return tokens, "", 0
	}
	token := rand.Text() + rand.Text()
	fh, err := os.CreateTemp("", "pi-sandbox-serve-token-")
	if err == nil {
		_, err = fh.WriteString(token + "\n")
		err = errors.Join(err, fh.Close())
	}
	if err != nil {
		fmt.Fprintf(io.err, "pi-sandbox serve: writing the generated token: %v\n", err)
		if fh != nil {
			os.Remove(fh.Name())
		}
		return nil, "", 1
	}
	fmt.Fprintf(io.err, "pi-sandbox serve: the bearer token is in %s (mode 0600, removed at exit)\n", fh.Name())
	return []string{token}, fh.Name(), 0
}

// sessionSandboxes returns how each session's sandbox is made from the
// flags: docker and k8s --image a fresh container or pod; local a fresh
// subdirectory of --workdir (removed at the session's end). It says on
// stderr when sessions are not isolated from each other.
func sessionSandboxes(cfg open.Config, io stdio) (func(context.Context, string) (*sandbox.Sandbox, error), func(string), error) {
	cfg.Note = noteTo("serve", io)
	root := cfg.WorkDir
	if root == "" {
		root = "."
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, nil, err
	}
	shared := ""
	switch {
	case len(cfg.Docker.Mounts) > 0 || len(cfg.K8s.Mounts) > 0:
		shared = "their --mount directories are shared"
	case cfg.Backend == "local":
		shared = "each works in its own subdirectory of " + root + ", but on this machine as this user"
	case cfg.Backend == "ssh":
		shared = "they share the remote account and its directories"
	case cfg.Docker.Container != "" || cfg.K8s.Pod != "":
		shared = "they share one container"
	}
	if shared != "" {
		fmt.Fprintf(io.err, "pi-sandbox serve: warning: sessions are not isolated from each other: %s\n", shared)
	}
	if cfg.Backend != "local" {
		return func(ctx context.Context, _ string) (*sandbox.Sandbox, error) { return open.Open(ctx, cfg) }, nil, nil
	}
	dir := func(id string) string { return filepath.Join(root, "mcp-session-"+strings.ToLower(id)) }
	newSandbox := func(ctx context.Context, id string) (*sandbox.Sandbox, error) {
		c := cfg
		c.WorkDir = dir(id)
		if err := os.Mkdir(c.WorkDir, 0o700); err != nil {
			return nil, fmt.Errorf("the session's directory: %w", err)
		}
		sb, err := open.Open(ctx, c)
		if err != nil {
			os.RemoveAll(c.WorkDir)
		}
		return sb, err
	}
	return newSandbox, func(id string) { os.RemoveAll(dir(id)) }, nil
}
