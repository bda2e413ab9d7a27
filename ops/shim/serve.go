package shim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pi-sandbox/pi-sandbox/internal/growstack"
	"github.com/pi-sandbox/pi-sandbox/internal/oneconn"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/native"
	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

// exitWait bounds how long the helper waits, after its client is gone, for
// the calls in flight to kill their trees and end.
const exitWait = 2500 * time.Millisecond

// serveMain is `__shim serve`: the in-target helper. It speaks HTTP/2
// cleartext on stdin/stdout until stdin ends (or, with --lease, stays
// silent that long), then kills every command it runs and exits.
// `__shim serve --listen DIR` is the daemon mode (serve_daemon.go).
func serveMain(args []string, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "--listen" || strings.HasPrefix(args[0], "--listen=")) {
		return daemonMain(args, stderr)
	}
	fs := flag.NewFlagSet("__shim serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pidfile := fs.String("pidfile", "", "write the helper's pid to `FILE` (for `__shim kill`), removed on exit")
	lease := fs.Duration("lease", 0, "exit when nothing arrived on stdin for `DURATION` (the client pings; zero: never)")
	endCtr := fs.Bool("end-container", false, "once the client is gone, end the container (an ephemeral one: its init is the keep-alive script)")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "pi-sandbox-shim: usage: __shim serve [--pidfile FILE] [--lease DURATION] [--end-container] | __shim serve --listen DIR")
		return 2
	}
	if *lease < 0 {
		fmt.Fprintln(stderr, "pi-sandbox-shim: serve: negative --lease")
		return 2
	}
	if *pidfile != "" {
		if err := writePidfile(*pidfile); err != nil {
			fmt.Fprintf(stderr, "pi-sandbox-shim: serve: pid file: %v\n", err)
			return 1
		}
		defer removePidfile(*pidfile)
	}
	closePinOnExec()
	// Commands of the same user must not trace or read the helper's memory.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		fmt.Fprintf(stderr, "pi-sandbox-shim: warning: dumpable: %v\n", err)
	}
	// The protocol owns fd 0 and 1: move them away so that nothing else in
	// this process (or a child by inheritance) can write into the stream.
	in, out, err := takeStdio()
	if err != nil {
		fmt.Fprintf(stderr, "pi-sandbox-shim: serve: %v\n", err)
		return 1
	}
	conn := &stdioConn{r: in, w: out, closed: make(chan struct{})}
	if *lease > 0 {
		go conn.watchLease(*lease, stderr)
	}
	// A kill request (`__shim kill --pidfile`, SIGTERM) ends the session
	// like a lost client: every tree is killed before the helper exits.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		select {
		case <-sigs:
			conn.Close()
		case <-conn.closed:
		}
	}()
	srv := newServer(nil)
	srv.env = helperEnv()
	serveSession(conn, srv)
	if *endCtr {
		endContainer(stderr)
	}
	return 0
}

// sessionConn is one client's byte stream; Done is closed when it ends.
type sessionConn interface {
	net.Conn
	Done() <-chan struct{}
}

// closingConn is a session's connection (the daemon's unix socket, the
// in-process pipe): the first failed read or write closes it, and Done
// reports that it is closed.
type closingConn struct {
	net.Conn
	once sync.Once
	done chan struct{}
}

func newClosingConn(c net.Conn) *closingConn {
	return &closingConn{Conn: c, done: make(chan struct{})}
}

func (c *closingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.Close()
	}
	return n, err
}

func (c *closingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if err != nil {
		c.Close()
	}
	return n, err
}

func (c *closingConn) Close() error {
	c.once.Do(func() {
		close(c.done)
		c.Conn.Close()
	})
	return nil
}

func (c *closingConn) Done() <-chan struct{} { return c.done }

// serveSession serves one client session on conn with s until it ends,
// then cancels the session's calls (each running command kills its tree),
// waits for them and closes the session's backend.
func serveSession(conn sessionConn, s *server) {
	srv := &http.Server{
		Handler:   s.mux(),
		Protocols: proto.Protocols(),
		HTTP2: &http.HTTP2Config{
			MaxConcurrentStreams:          512,
			MaxReceiveBufferPerStream:     1 << 20,
			MaxReceiveBufferPerConnection: 16 << 20,
			// The host's request bodies (a tunnel's or the egress proxy's
			// bytes toward the target) in large frames, not 16 KiB ones.
			MaxReadFrameSize: 1 << 20,
		},
		ErrorLog: nil,
	}
	go srv.Serve(oneconn.New(conn))
	<-conn.Done()
	// The client is gone: every running command kills its tree.
	s.endCalls()
	srv.Close()
	s.close()
}

// takeStdio duplicates fd 0 and 1 for the protocol and points fd 0 at
// /dev/null and fd 1 at fd 2.
func takeStdio() (*os.File, *os.File, error) {
	r, err := unix.FcntlInt(0, unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return nil, nil, fmt.Errorf("dup stdin: %w", err)
	}
	w, err := unix.FcntlInt(1, unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return nil, nil, fmt.Errorf("dup stdout: %w", err)
	}
	if null, err := unix.Open("/dev/null", unix.O_RDONLY, 0); err == nil {
		unix.Dup2(null, 0)
		unix.Close(null)
	}
	unix.Dup2(2, 1)
	return os.NewFile(uintptr(r), "helper-in"), os.NewFile(uintptr(w), "helper-out"), nil
}

// server holds one session's state.
type server struct {
	shared  *native.Registry // the daemon's background registry; nil: the session's own (they end with it)
	shim    string           // runs commands (`shim __shim run`); "": this executable
	env     []string         // the base environment of commands; nil: this process's
	limits  *daemonLimits    // the daemon's check of its resource limits; nil: none
	act     *activity        // the daemon's record of client calls (idle timeout); nil: none
	mu      sync.Mutex
	b       *native.Backend // set by hello
	hello   proto.HelloReply
	oom     bool // hello's OOMCounter
	sets    map[int]*rootSet
	runs    map[string]context.CancelFunc
	nextSet int
	egress  egressState // serve_egress.go
	active  sync.WaitGroup
	ctx     context.Context
	cancel  context.CancelFunc
}

func newServer(shared *native.Registry) *server {
	ctx, cancel := context.WithCancel(context.Background())
	return &server{shared: shared, sets: map[int]*rootSet{}, runs: map[string]context.CancelFunc{}, ctx: ctx, cancel: cancel}
}

// endCalls ends every request context (each running command kills its
// tree) and waits for the calls to return, at most exitWait.
func (s *server) endCalls() {
	s.cancel()
	done := make(chan struct{})
	go func() { s.active.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(exitWait):
	}
}

func (s *server) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rs := range s.sets {
		if rs.close != nil {
			rs.close()
		}
	}
	if s.b != nil {
		s.b.Close()
	}
}

func (s *server) mux() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("POST "+proto.PathHello, s.handleHello)
	m.HandleFunc("POST "+proto.PathRoots, s.handleRoots)
	m.HandleFunc("POST "+proto.PathFS, s.handleFS)
	m.HandleFunc("POST "+proto.PathRead, s.handleRead)
	m.HandleFunc("POST "+proto.PathWrite, s.handleWrite)
	m.HandleFunc("POST "+proto.PathEdit, s.handleEdit)
	m.HandleFunc("POST "+proto.PathSearch, s.handleSearch)
	m.HandleFunc("POST "+proto.PathRun, s.handleRun)
	m.HandleFunc("POST "+proto.PathKill, s.handleKill)
	m.HandleFunc("POST "+proto.PathPS, s.handlePS)
	m.HandleFunc("POST "+proto.PathDial, s.handleDial)
	m.HandleFunc("POST "+proto.PathCheckpoint, s.handleCheckpoint)
	s.egress.routes(m, s)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == proto.PathEnd {
			s.handleEnd(w, r) // it waits for the others: not one of them
			return
		}
		growstack.Grow() // every handler runs deep (JSON, confinement, HTTP/2)
		s.active.Add(1)
		defer s.active.Done()
		s.act.begin()
		defer s.act.end()
		// A request also ends when the session does.
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		stop := context.AfterFunc(s.ctx, cancel)
		defer stop()
		m.ServeHTTP(w, r.WithContext(ctx))
	})
}

func (s *server) handleHello(w http.ResponseWriter, r *http.Request) {
	var h proto.Hello
	if !decode(w, r.Body, &h) {
		return
	}
	if h.Version != proto.Version {
		replyErr(w, fmt.Errorf("shim: protocol version %d, the helper speaks %d", h.Version, proto.Version))
		return
	}
	exe := s.shim
	if exe == "" {
		exe = selfExe
		if _, err := os.Stat(exe); err != nil { // no /proc
			if exe, err = os.Executable(); err != nil {
				replyErr(w, fmt.Errorf("shim: executable: %w", err))
				return
			}
		}
	}
	base := s.env
	if base == nil {
		base = os.Environ()
	}
	env := append(base[:len(base):len(base)], proto.Strings(h.Env)...)
	if s.shared != nil {
		s.shared.SetMax(h.MaxBackground)
	}
	b, err := native.New(r.Context(), native.Config{
		WorkDir:  string(h.WorkDir),
		SpillDir: string(h.SpillDir),
		Shell:    string(h.Shell),
		Env:      env,
		ShimPath: exe,
		// The helper owns what commands leave running, until it exits
		// (the daemon: until it is stopped).
		Background:    true,
		MaxBackground: h.MaxBackground,
		Registry:      s.shared,
		// Commands come one after another: keep shims that serve them.
		WarmShim: true,
	})
	if err != nil {
		replyErr(w, err)
		return
	}
	info := b.Info()
	reply := proto.HelloReply{
		Version:      proto.Version,
		PID:          os.Getpid(),
		UID:          info.UID,
		GID:          info.GID,
		User:         info.User,
		Home:         info.Home,
		OS:           runtime.GOOS,
		Arch:         runtime.GOARCH,
		Shell:        info.Shell,
		Capabilities: append(info.Capabilities, "helper", "grep", "find", "confine", "edit"),
		Limits:       info.Limits,
	}
	if h.WantBuild || s.shared != nil { // the daemon has it already
		reply.Build = selfHash(exe)
	}
	if s.shared != nil {
		// Background processes outlive this client: the daemon owns them.
		reply.Capabilities = append(reply.Capabilities, "daemon")
	}
	s.mu.Lock()
	old := s.b
	s.b, s.hello, s.oom = b, reply, h.OOMCounter
	s.mu.Unlock()
	if old != nil {
		old.Close()
	}
	writeJSON(w, reply)
}

// handleEnd ends the session's calls, waits for them (at most exitWait),
// removes the directory the client names, and replies: the client closes
// the stream after. Calls that come later fail at once (the session's
// context is done).
func (s *server) handleEnd(w http.ResponseWriter, r *http.Request) {
	var req proto.EndRequest
	if !decode(w, r.Body, &req) {
		return
	}
	dir := string(req.Remove)
	if dir != "" && (!filepath.IsAbs(dir) || filepath.Clean(dir) == "/") {
		replyErr(w, fmt.Errorf("shim: end: will not remove %q", dir))
		return
	}
	s.endCalls()
	// The pooled shims and, in a session of its own, the background groups
	// end too (the daemon's stay: they are not this session's).
	s.mu.Lock()
	b := s.b
	s.mu.Unlock()
	if b != nil {
		b.Close()
	}
	if dir != "" {
		if err := os.RemoveAll(dir); err != nil {
			replyErr(w, fmt.Errorf("shim: end: %w", err))
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// selfExe runs the helper's own binary: the file this process was started
// from, whatever has since been written at its path. Commands run under it,
// so a command that replaces the binary's file changes nothing the helper
// runs later.
const selfExe = "/proc/self/exe"

var (
	hashOnce sync.Once
	hashHex  string
)

// selfHash is the SHA-256 of the helper's binary: the client compares it
// with the binary it uploaded. An execute-only binary cannot be read by
// its own process: its build is the hash prefix in its name (nameHash).
func selfHash(exe string) string {
	hashOnce.Do(func() {
		f, err := os.Open("/proc/self/exe")
		if err != nil {
			f, err = os.Open(exe)
		}
		if err != nil {
			hashHex = nameHash(exe)
			return
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err == nil {
			hashHex = hex.EncodeToString(h.Sum(nil))
		}
	})
	return hashHex
}

// backend returns the session's backend, or replies an error.
func (s *server) backend(w http.ResponseWriter) *native.Backend {
	s.mu.Lock()
	b := s.b
	s.mu.Unlock()
	if b == nil {
		replyErr(w, errors.New("shim: no hello yet"))
	}
	return b
}

func decode(w http.ResponseWriter, r io.Reader, v any) bool {
	if err := json.NewDecoder(io.LimitReader(r, 64<<20)).Decode(v); err != nil {
		replyErr(w, fmt.Errorf("shim: bad request: %w", err))
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// replyErr answers with an encoded error.
func replyErr(w http.ResponseWriter, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(proto.StatusError)
	json.NewEncoder(w).Encode(proto.FromError(err))
}

// removePidfile removes name if it still holds this process's pid (a newer
// helper may have replaced it).
func removePidfile(name string) {
	b, err := os.ReadFile(name)
	if err == nil && string(b) == strconv.Itoa(os.Getpid())+"\n" {
		os.Remove(name)
	}
}

// stdioConn is a net.Conn over the helper's stdin and stdout.
type stdioConn struct {
	r, w      *os.File
	closeOnce sync.Once
	closed    chan struct{}
	lastRead  atomic.Int64 // unix nanoseconds of the last bytes read
}

// watchLease closes the connection when nothing was read for d: a
// transport that neither closes stdin nor kills the helper when its client
// goes away (pods/exec) would otherwise leave it, and every command, running.
// The client keeps the lease with HTTP/2 pings.
func (c *stdioConn) watchLease(d time.Duration, stderr io.Writer) {
	c.lastRead.Store(time.Now().UnixNano())
	t := time.NewTicker(min(d/4, time.Second))
	defer t.Stop()
	for {
		select {
		case <-c.closed:
			return
		case now := <-t.C:
			if idle := now.Sub(time.Unix(0, c.lastRead.Load())); idle > d {
				fmt.Fprintf(stderr, "pi-sandbox-shim: serve: nothing from the client for %s (lease %s): exiting\n", idle.Round(time.Millisecond), d)
				c.Close()
				return
			}
		}
	}
}

func (c *stdioConn) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		c.lastRead.Store(time.Now().UnixNano())
	}
	if err != nil {
		c.Close()
	}
	return n, err
}

func (c *stdioConn) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err != nil {
		c.Close()
	}
	return n, err
}

func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

func (c *stdioConn) Done() <-chan struct{} { return c.closed }

func (c *stdioConn) LocalAddr() net.Addr                { return stdioAddr{} }
func (c *stdioConn) RemoteAddr() net.Addr               { return stdioAddr{} }
func (c *stdioConn) SetDeadline(t time.Time) error      { return nil }
func (c *stdioConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *stdioConn) SetWriteDeadline(t time.Time) error { return nil }

type stdioAddr struct{}

func (stdioAddr) Network() string { return "stdio" }
func (stdioAddr) String() string  { return "stdio" }
