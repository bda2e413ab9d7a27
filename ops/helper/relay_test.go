package helper_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/helper"
	"github.com/pi-sandbox/pi-sandbox/ops/opstest"
	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

// The daemon mode: clients reach one long-lived helper through
// `__shim relay DIR`, as the CLI calls of an `up` sandbox do.

func shimEnv() []string {
	env := os.Environ()
	if shimEnvExtra != "" {
		env = append(env, shimEnvExtra)
	}
	return env
}

func testExe(t *testing.T) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// daemonDir returns a fresh directory for a daemon, stopped in t.Cleanup
// (which must leave none of its processes).
func daemonDir(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "h")
	t.Cleanup(func() { stopDaemon(t, testExe(t), dir) })
	return dir
}

func stopDaemon(t *testing.T, exe, dir string) {
	cmd := exec.Command(exe, "__shim", "relay", "--stop", dir)
	cmd.Env = shimEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("relay --stop: %v: %s", err, out)
	}
}

// relayClient opens a client through the relay of exe to the daemon in dir.
func relayClient(t *testing.T, exe, dir string, maxBackground int) *helper.Client {
	t.Helper()
	return relayClientDial(t, helper.RelayDial(exe, shimEnv(), dir, ""), maxBackground)
}

func relayClientDial(t *testing.T, dial func(context.Context) (io.ReadWriteCloser, error), maxBackground int) *helper.Client {
	t.Helper()
	b, err := helper.New(t.Context(), helper.Config{
		Name:  "relay",
		Dial:  dial,
		Hello: proto.Hello{WorkDir: proto.Str(t.TempDir()), SpillDir: proto.Str(t.TempDir()), MaxBackground: maxBackground},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// TestRelayConformance runs the whole suite with every case a new client
// of one daemon.
func TestRelayConformance(t *testing.T) {
	exe, dir := testExe(t), daemonDir(t)
	opstest.TestBackend(t, func(t *testing.T) ops.Backend {
		b := relayClient(t, exe, dir, 0)
		if !b.Info().Has("daemon") {
			t.Fatalf("no daemon capability: %v", b.Info().Capabilities)
		}
		return b
	})
}

// TestRelayBackgroundOutlivesClient: what one client leaves running is
// alive for the next client, listed by its Processes, and killed when the
// daemon stops.
func TestRelayBackgroundOutlivesClient(t *testing.T) {
	exe, dir := testExe(t), daemonDir(t)
	work := t.TempDir()
	a := relayClient(t, exe, dir, 0)
	runOut(t, a, fmt.Sprintf("sleep 300 & echo $! > %s/pids; echo started", work))
	pa := a.Hello().PID
	a.Close()
	pid := pids(t, work)[0]

	b := relayClient(t, exe, dir, 0)
	if b.Hello().PID != pa {
		t.Fatalf("second client reached daemon %d, the first %d", b.Hello().PID, pa)
	}
	if !testenv.Alive(pid) {
		t.Fatalf("background process %d died with its client", pid)
	}
	ps, err := b.Processes(t.Context())
	if err != nil || len(ps) != 1 || ps[0].PID != pid {
		t.Fatalf("Processes = %+v, %v; want %d", ps, err, pid)
	}
	b.Close()
	stopDaemon(t, exe, dir)
	waitDead(t, []int{pid, pa}, 3*time.Second)
}

// TestRelayLostClientKillsOnlyItsCalls: a client whose relay is killed in
// the middle of a call loses that call's tree (setsid escapee included);
// another client's call and the background processes go on.
func TestRelayLostClientKillsOnlyItsCalls(t *testing.T) {
	exe, dir := testExe(t), daemonDir(t)
	work, workB := t.TempDir(), t.TempDir()
	keeper := relayClient(t, exe, dir, 0)
	runOut(t, keeper, fmt.Sprintf("sleep 300 & echo $! > %s/bg; echo started", work))
	bg, _ := strconv.Atoi(strings.TrimSpace(runOut(t, keeper, "cat "+work+"/bg")))

	var mu sync.Mutex
	var relay *exec.Cmd
	victim := relayClientDial(t, func(ctx context.Context) (io.ReadWriteCloser, error) {
		cmd := exec.Command(exe, "__shim", "relay", dir)
		cmd.Env = shimEnv()
		cmd.Stderr = os.Stderr
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		go cmd.Wait()
		mu.Lock()
		relay = cmd
		mu.Unlock()
		return struct {
			io.Reader
			io.WriteCloser
		}{out, in}, nil
	}, 0)

	// The other client's call in flight must not die with the victim.
	otherDone := make(chan error, 1)
	go func() {
		otherDone <- keeper.Run(t.Context(), &ops.Cmd{Command: fmt.Sprintf("echo $$ > %s/other; sleep 2; echo survived", workB), Output: io.Discard})
	}()
	ready := newReady()
	runDone := make(chan error, 1)
	go func() {
		runDone <- victim.Run(t.Context(), &ops.Cmd{Command: treeCommand(work), Output: ready, Timeout: time.Minute})
	}()
	select {
	case <-ready.ch:
	case err := <-runDone:
		t.Fatalf("the victim's command ended early: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the victim's command never became ready")
	}
	mu.Lock()
	relay.Process.Kill()
	mu.Unlock()
	if err := <-runDone; !errors.Is(err, ops.ErrTransport) {
		t.Errorf("the victim's Run = %v, want a transport error", err)
	}
	waitDead(t, pids(t, work), 3*time.Second)
	if err := <-otherDone; err != nil {
		t.Errorf("the other client's call: %v", err)
	}
	if !testenv.Alive(bg) {
		t.Errorf("background process %d died with another client", bg)
	}
}

// ready is a writer that closes ch at the first "ready" line.
type readyWriter struct {
	once sync.Once
	mu   sync.Mutex
	buf  strings.Builder
	ch   chan struct{}
}

func newReady() *readyWriter { return &readyWriter{ch: make(chan struct{})} }

func (r *readyWriter) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.buf.Write(p)
	ok := strings.Contains(r.buf.String(), "ready\n")
	r.mu.Unlock()
	if ok {
		r.once.Do(func() { close(r.ch) })
	}
	return len(p), nil
}

// TestRelayLimitAcrossClients: the limit of background process groups
// counts those of every client of the daemon.
func TestRelayLimitAcrossClients(t *testing.T) {
	exe, dir := testExe(t), daemonDir(t)
	work := t.TempDir()
	for i := range 2 {
		c := relayClient(t, exe, dir, 2)
		runOut(t, c, fmt.Sprintf("sleep 300 & echo $! >> %s/pids; echo %d", work, i))
		c.Close()
	}
	c := relayClient(t, exe, dir, 2)
	err := c.Run(t.Context(), &ops.Cmd{Command: fmt.Sprintf("sleep 300 & echo $! > %s/third", work)})
	if !errors.Is(err, ops.ErrBackgroundLimit) {
		t.Fatalf("third client's Run = %v, want ops.ErrBackgroundLimit", err)
	}
	third, _ := strconv.Atoi(strings.TrimSpace(runOut(t, c, "cat "+work+"/third")))
	waitDead(t, []int{third}, 3*time.Second)
	for _, p := range pids(t, work) {
		if !testenv.Alive(p) {
			t.Errorf("background process %d of an earlier client died", p)
		}
	}
}

// TestRelayConcurrentStartOneDaemon: clients racing on a directory with no
// daemon start one, and all reach it.
func TestRelayConcurrentStartOneDaemon(t *testing.T) {
	exe, dir := testExe(t), daemonDir(t)
	const n = 6
	got := make(chan int, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := helper.New(t.Context(), helper.Config{
				Name: "relay", Dial: helper.RelayDial(exe, shimEnv(), dir, ""),
				Hello: proto.Hello{WorkDir: proto.Str(t.TempDir()), SpillDir: proto.Str(t.TempDir())},
			})
			if err != nil {
				t.Error(err)
				got <- 0
				return
			}
			got <- b.Hello().PID
			b.Close()
		}()
	}
	wg.Wait()
	close(got)
	first := 0
	for p := range got {
		if first == 0 {
			first = p
		}
		if p != first || p == 0 {
			t.Errorf("clients reached daemons %d and %d", first, p)
		}
	}
}

// TestRelayBuildMismatch: a relay of another build stops the daemon there
// (its background processes end) and starts its own.
func TestRelayBuildMismatch(t *testing.T) {
	exe, dir := testExe(t), daemonDir(t)
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other-build")
	if err := os.WriteFile(other, append(data, 0), 0o755); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	old := relayClient(t, other, dir, 0)
	runOut(t, old, fmt.Sprintf("sleep 300 & echo $! > %s/pids; echo started", work))
	oldPID, oldBuild := old.Hello().PID, old.Hello().Build
	old.Close()

	cur := relayClient(t, exe, dir, 0)
	if h := cur.Hello(); h.PID == oldPID || h.Build == oldBuild {
		t.Fatalf("new build reached the old daemon (pid %d, build %.12s)", h.PID, h.Build)
	}
	waitDead(t, append(pids(t, work), oldPID), 3*time.Second)
}

// TestRelayRefusesOpenDirectory: the daemon's directory must be the
// user's own, mode 0700.
func TestRelayRefusesOpenDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "h")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	cmd := exec.Command(testExe(t), "__shim", "relay", dir)
	cmd.Env = shimEnv()
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !strings.Contains(string(out), "want 0700") {
		t.Fatalf("relay on a 0755 directory: %v, %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "helper.sock")); err == nil {
		t.Error("a daemon listens in the open directory")
	}
}
