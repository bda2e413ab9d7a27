package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/pi-sandbox/pi-sandbox/ops"
	sshops "github.com/pi-sandbox/pi-sandbox/ops/ssh"
	"github.com/pi-sandbox/pi-sandbox/ops/ssh/sshtest"
)

// openSSH opens a backend on cfg with a fresh working directory on s.
func openSSH(t *testing.T, s *sshtest.Server, cfg sshops.Config) *sshops.Backend {
	t.Helper()
	return s.Open(t, cfg)
}

// viaProxy returns s's config routed through a proxy the test controls.
func viaProxy(t *testing.T, s *sshtest.Server) (sshops.Config, *tcpProxy) {
	p := startProxy(t, s.Addr())
	cfg := s.Config()
	cfg.Port = p.Port()
	cfg.KnownHostsFile = s.KnownHostsFor(t, p.Addr())
	return cfg, p
}

// readySink closes ready when "ready" has been written.
type readySink struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	once  sync.Once
	ready chan struct{}
}

func newReadySink() *readySink { return &readySink{ready: make(chan struct{})} }

func (r *readySink) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf.Write(p)
	if strings.Contains(r.buf.String(), "ready") {
		r.once.Do(func() { close(r.ready) })
	}
	return len(p), nil
}

// runOut runs command and returns its output.
func runOut(t *testing.T, b ops.Backend, command string) string {
	t.Helper()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.Run(ctx, &ops.Cmd{Command: command, Output: &out}); err != nil {
		t.Fatalf("Run(%q): %v (output %q)", command, err, out.String())
	}
	return out.String()
}

// aliveScript prints those of the pids in file f that are alive and not
// zombies.
func aliveScript(f string) string {
	return "for p in $(cat " + f + " 2>/dev/null); do s=$(sed 's/.*) //' /proc/$p/stat 2>/dev/null | cut -c1); " +
		"case \"$s\" in Z|X|\"\") ;; *) echo $p;; esac; done"
}

// waitGone polls (the remote side notices a dropped connection
// asynchronously) until no pid in f is alive.
func waitGone(t *testing.T, b ops.Backend, f string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		left := strings.TrimSpace(runOut(t, b, aliveScript(f)))
		if left == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes of the cut command still alive: %s", left)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// runInFlight starts a command that prints ready and sleeps, waits for
// ready, calls fault, and returns Run's error and how long Run took after
// the fault.
func runInFlight(t *testing.T, b ops.Backend, pids string, fault func()) (error, time.Duration) {
	t.Helper()
	sink := newReadySink()
	errc := make(chan error, 1)
	go func() {
		errc <- b.Run(context.Background(), &ops.Cmd{
			Command: "sleep 300 & echo $! > " + pids + "; echo ready; wait",
			Output:  sink,
		})
	}()
	select {
	case <-sink.ready:
	case err := <-errc:
		t.Fatalf("command ended before the fault: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("command not ready after 30s")
	}
	start := time.Now()
	fault()
	select {
	case err := <-errc:
		return err, time.Since(start)
	case <-time.After(60 * time.Second):
		t.Fatal("Run still blocked 60s after the fault")
	}
	return nil, 0
}

func wantTransport(t *testing.T, err error) {
	t.Helper()
	var ee *ops.ExitError
	switch {
	case err == nil:
		t.Fatal("Run succeeded across a dropped connection")
	case !errors.Is(err, ops.ErrTransport):
		t.Fatalf("want an error wrapping ops.ErrTransport, got %v", err)
	case errors.As(err, &ee), errors.Is(err, ops.ErrExitUnknown):
		t.Fatalf("a transport failure looks like an exit: %v", err)
	}
}

func TestSSHConnectionCutMidCommand(t *testing.T) {
	s := sshtest.Start(t)
	cfg, p := viaProxy(t, s)
	b := openSSH(t, s, cfg)
	pids := path.Join(b.Info().WorkDir, "pids")
	err, d := runInFlight(t, b, pids, p.Cut)
	wantTransport(t, err)
	if d > 10*time.Second {
		t.Errorf("Run took %v to notice the cut", d)
	}
	t.Logf("after the cut: %v (%v)", err, d)
	// The next calls reconnect.
	if got := runOut(t, b, "echo again"); got != "again\n" {
		t.Fatalf("after reconnect: %q", got)
	}
	if _, err := b.Stat(context.Background(), pids); err != nil {
		t.Fatalf("SFTP after reconnect: %v", err)
	}
	// sshd closed the cut session's stdin: the wrapper's watchdog killed
	// the group.
	waitGone(t, b, pids)
}

func TestSSHKeepaliveClosesDeadConnection(t *testing.T) {
	s := sshtest.Start(t)
	cfg, p := viaProxy(t, s)
	cfg.KeepAlive = 500 * time.Millisecond
	b := openSSH(t, s, cfg)
	pids := path.Join(b.Info().WorkDir, "pids")
	err, d := runInFlight(t, b, pids, p.Freeze)
	wantTransport(t, err)
	// Three missed keepalives at 500ms, plus slack for a loaded machine.
	if d > 10*time.Second {
		t.Errorf("Run took %v to give up on a frozen connection", d)
	}
	t.Logf("frozen connection: %v (%v)", err, d)
	p.Thaw()
	if got := runOut(t, b, "echo again"); got != "again\n" {
		t.Fatalf("after reconnect: %q", got)
	}
}

func TestSSHServerRestartBetweenCalls(t *testing.T) {
	s := sshtest.Start(t)
	b := openSSH(t, s, s.Config())
	ctx := context.Background()
	f := path.Join(b.Info().WorkDir, "f")
	if err := b.WriteFile(ctx, f, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	runOut(t, b, "true")
	s.Restart()
	if got := runOut(t, b, "cat "+f); got != "one" {
		t.Fatalf("Run after restart: %q", got)
	}
	s.Restart()
	if got, err := ops.ReadFile(ctx, b, f); err != nil || string(got) != "one" {
		t.Fatalf("read after restart: %q %v", got, err)
	}
}

func TestSSHConcurrent64(t *testing.T) {
	s := sshtest.Start(t)
	b := openSSH(t, s, s.Config())
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Go(func() {
			var out bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			err := b.Run(ctx, &ops.Cmd{Command: fmt.Sprintf("sleep 0.2; echo %d", i), Output: &out})
			if err == nil && out.String() != fmt.Sprintf("%d\n", i) {
				err = fmt.Errorf("output %q", out.String())
			}
			if err != nil {
				errs <- fmt.Errorf("call %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestSSHMaxSessions runs against an sshd that allows 2 sessions per
// connection: refused sessions (OpenChannelError ConnectionFailed) move to
// other connections.
func TestSSHMaxSessions(t *testing.T) {
	s := sshtest.StartWith(t, sshtest.Options{Extra: []string{"MaxSessions 2"}})
	b := openSSH(t, s, s.Config())
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := b.Run(ctx, &ops.Cmd{Command: "sleep 0.3"}); err != nil {
				errs <- fmt.Errorf("call %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestSSHHostKeyVerified(t *testing.T) {
	s := sshtest.Start(t)
	other := sshtest.Start(t) // a different host key
	cfg := s.Config()
	cfg.KnownHostsFile = other.KnownHostsFor(t, s.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := sshops.New(ctx, cfg)
	var ke *knownhosts.KeyError
	if !errors.As(err, &ke) || len(ke.Want) == 0 {
		t.Fatalf("want a host key mismatch, got %v", err)
	}
	cfg.KnownHostsFile = ""
	cfg.InsecureIgnoreHostKey = true
	cfg.WorkDir = s.TempDir(t)
	b, err := sshops.New(ctx, cfg)
	if err != nil {
		t.Fatalf("InsecureIgnoreHostKey: %v", err)
	}
	b.Close()
}

func TestSSHDialCanceled(t *testing.T) {
	s := sshtest.Start(t)
	cfg, p := viaProxy(t, s)
	p.Freeze() // the handshake never completes
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := sshops.New(ctx, cfg)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want the ctx's deadline, got %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("New took %v after its ctx expired", d)
	}
}
