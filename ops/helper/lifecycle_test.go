package helper_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/helper"
)

// treeCommand starts a tree (a background child, a setsid escapee and a
// foreground sleep), records its pids in dir/pids and says "ready".
func treeCommand(dir string) string {
	f := filepath.Join(dir, "pids")
	return fmt.Sprintf("sleep 300 & echo $! >> %[1]s; setsid sleep 300 & echo $! >> %[1]s; echo $$ >> %[1]s; echo ready; sleep 300", f)
}

// pids reads the pids the tree recorded.
func pids(t *testing.T, dir string) []int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "pids"))
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, f := range strings.Fields(string(data)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// waitDead fails unless every pid is gone within d.
func waitDead(t *testing.T, ps []int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		var left []int
		for _, p := range ps {
			if testenv.Alive(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range left {
				syscall.Kill(p, syscall.SIGKILL)
			}
			t.Fatalf("processes %v still alive %s later", left, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startTree runs treeCommand in the background and waits for "ready".
func startTree(t *testing.T, b ops.Backend, dir string) <-chan error {
	t.Helper()
	ready := newMark("ready")
	errc := make(chan error, 1)
	go func() { errc <- b.Run(context.Background(), &ops.Cmd{Command: treeCommand(dir), Output: ready}) }()
	select {
	case <-ready.seen:
	case err := <-errc:
		t.Fatalf("Run ended before ready: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no ready")
	}
	return errc
}

// TestDisconnectKillsEverything: when the client goes (EOF on the helper's
// stdin), the helper kills every tree it runs and exits within 3 s.
func TestDisconnectKillsEverything(t *testing.T) {
	b := open(t).(*helper.Client)
	dir := t.TempDir()
	errc := startTree(t, b, dir)
	helperPID := b.Hello().PID
	ps := append(pids(t, dir), helperPID)
	b.Close()
	if err := <-errc; err == nil {
		t.Error("Run after Close = nil, want an error")
	}
	waitDead(t, ps, 3*time.Second)
}

// TestHelperKilled: a helper killed with SIGKILL fails the call in flight
// with a transport error within 2 s, its tree dies, and the next call
// starts a new helper.
func TestHelperKilled(t *testing.T) {
	b := open(t).(*helper.Client)
	dir := t.TempDir()
	errc := startTree(t, b, dir)
	old := b.Hello().PID
	ps := pids(t, dir)
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, ops.ErrTransport) {
			t.Errorf("Run = %v, want an error wrapping ops.ErrTransport", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Run still blocked 2 s after the helper was killed")
	}
	waitDead(t, ps, 5*time.Second)
	var out bytes.Buffer
	if err := b.Run(t.Context(), &ops.Cmd{Command: "echo again", Output: &out}); err != nil || out.String() != "again\n" {
		t.Fatalf("next Run = %v, %q; want a new helper to run it", err, out.String())
	}
	if now := b.Hello().PID; now == old || now == 0 {
		t.Errorf("helper pid %d after the kill, was %d: want a new helper", now, old)
	}
}

// TestManyConcurrentCalls: 300 calls at once queue below the stream limit;
// none fails.
func TestManyConcurrentCalls(t *testing.T) {
	b := open(t)
	dir := b.Info().WorkDir
	var wg sync.WaitGroup
	errs := make(chan error, 300)
	for i := range 300 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				var out bytes.Buffer
				err := b.Run(t.Context(), &ops.Cmd{Command: "echo " + strconv.Itoa(i), Output: &out})
				if err == nil && out.String() != strconv.Itoa(i)+"\n" {
					err = fmt.Errorf("call %d: output %q", i, out.String())
				}
				errs <- err
				return
			}
			_, err := b.Stat(t.Context(), dir)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestSlowConsumerOthersResponsive: a command whose output nobody reads
// fast holds back only its own stream.
func TestSlowConsumerOthersResponsive(t *testing.T) {
	b := open(t)
	blocked := make(chan struct{})
	release := make(chan struct{})
	sink := writerFunc(func(p []byte) (int, error) {
		select {
		case <-blocked:
		default:
			close(blocked)
		}
		<-release
		return len(p), nil
	})
	errc := make(chan error, 1)
	go func() {
		errc <- b.Run(context.Background(), &ops.Cmd{Command: "head -c 200000000 /dev/zero", Output: sink})
	}()
	<-blocked
	for range 20 {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		_, err := b.Stat(ctx, b.Info().WorkDir)
		cancel()
		if err != nil {
			t.Fatalf("Stat while another stream is stalled: %v", err)
		}
	}
	close(release)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// mark closes seen once its text has appeared in the output.
type mark struct {
	mu   sync.Mutex
	text []byte
	buf  []byte
	seen chan struct{}
}

func newMark(text string) *mark { return &mark{text: []byte(text), seen: make(chan struct{})} }

func (m *mark) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.buf == nil || len(m.buf) < 4096 {
		m.buf = append(m.buf, p...)
		if bytes.Contains(m.buf, m.text) {
			select {
			case <-m.seen:
			default:
				close(m.seen)
			}
		}
	}
	return len(p), nil
}

// TestEndKillsThenRemoves: End returns once every tree is dead and the
// directory is gone (no polling), the stream is closed after, and a second
// End, with no helper left, says so.
func TestEndKillsThenRemoves(t *testing.T) {
	b := open(t).(*helper.Client)
	dir := t.TempDir()
	errc := startTree(t, b, dir)
	ps := pids(t, dir)
	doomed := filepath.Join(t.TempDir(), "sandbox")
	if err := os.MkdirAll(filepath.Join(doomed, "spill", "deep"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := b.End(t.Context(), doomed); err != nil {
		t.Fatalf("End = %v", err)
	}
	for _, p := range ps {
		if testenv.Alive(p) {
			t.Errorf("pid %d alive after End", p)
		}
	}
	if _, err := os.Stat(doomed); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Stat after End = %v, want not exist", err)
	}
	if err := <-errc; err == nil {
		t.Error("Run cut by End = nil, want an error")
	}
	if err := b.End(t.Context(), ""); !errors.Is(err, ops.ErrTransport) {
		t.Errorf("End after End = %v, want ErrTransport", err)
	}
	if _, err := b.Stat(t.Context(), dir); !errors.Is(err, ops.ErrTransport) {
		t.Errorf("Stat after End = %v, want ErrTransport (closed)", err)
	}
}

// TestEndRefusesRoot: End will not remove "/" or a relative path, and
// says why.
func TestEndRefusesRoot(t *testing.T) {
	for _, d := range []string{"/", "rel/dir", "/.."} {
		b := open(t).(*helper.Client)
		if err := b.End(t.Context(), d); err == nil || !strings.Contains(err.Error(), "will not remove") {
			t.Errorf("End(%q) = %v, want a refusal", d, err)
		}
	}
}
