package integration

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

// markSink records output and closes ready when it contains the marker.
type markSink struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	marker string
	ready  chan struct{}
	once   sync.Once
}

func newMarkSink(marker string) *markSink {
	return &markSink{marker: marker, ready: make(chan struct{})}
}

func (s *markSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	if strings.Contains(s.buf.String(), s.marker) {
		s.once.Do(func() { close(s.ready) })
	}
	return len(p), nil
}

// startReady runs command in the background and waits for "ready".
func startReady(t *testing.T, b ops.Backend, cmd *ops.Cmd) <-chan error {
	t.Helper()
	sink := newMarkSink("ready\n")
	cmd.Output = sink
	errc := make(chan error, 1)
	go func() { errc <- b.Run(context.Background(), cmd) }()
	select {
	case <-sink.ready:
	case err := <-errc:
		t.Fatalf("Run ended before ready: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no ready marker")
	}
	return errc
}

// TestDockerFaultContainerKilled: the container dies under a command; the
// call returns (within 10 s: no hang; make faults measures how soon) with a
// transport error, and so does the next call.
func TestDockerFaultContainerKilled(t *testing.T) {
	cli := needImage(t, "pi-sandbox/busybox")
	b := newBackend(t, docker.Config{Image: "pi-sandbox/busybox"})
	errc := startReady(t, b, &ops.Cmd{Command: "echo ready; sleep 300"})
	if _, err := cli.ContainerKill(t.Context(), b.ID(), client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, ops.ErrTransport) {
			t.Errorf("Run = %v, want an error wrapping ops.ErrTransport", err)
		}
		var ee *ops.ExitError
		if errors.As(err, &ee) {
			t.Errorf("Run = %v: a dead container must not look like an exit status", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run still blocked 10s after the container was killed")
	}
	_, err := b.Stat(t.Context(), "/workspace")
	if !errors.Is(err, ops.ErrTransport) || ops.ErrnoOf(err) == ops.ENOENT {
		t.Errorf("Stat after the kill = %v, want a transport error, not ENOENT", err)
	}
}

// TestDockerFaultContainerPaused: a frozen container cannot run the kill
// exec, yet the timeout still ends the call; once the container runs again
// the command's tree dies (17.13), with the helper (its shim's deadline)
// and without (the wrapper's).
func TestDockerFaultContainerPaused(t *testing.T) {
	for _, noHelper := range []bool{false, true} {
		t.Run(map[bool]string{false: "helper", true: "nohelper"}[noHelper], func(t *testing.T) {
			testContainerPaused(t, noHelper)
		})
	}
}

func testContainerPaused(t *testing.T, noHelper bool) {
	cli := needImage(t, "pi-sandbox/busybox")
	b := newBackend(t, docker.Config{Image: "pi-sandbox/busybox", NoHelper: noHelper})
	// Registered after newBackend's Close, so it runs first.
	t.Cleanup(func() {
		cli.ContainerUnpause(context.Background(), b.ID(), client.ContainerUnpauseOptions{})
	})
	const limit = 1500 * time.Millisecond
	start := time.Now()
	errc := startReady(t, b, &ops.Cmd{Command: "echo ready; sleep 300", Timeout: limit})
	if _, err := cli.ContainerPause(t.Context(), b.ID(), client.ContainerPauseOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		var te *ops.TimeoutError
		if !errors.As(err, &te) {
			t.Errorf("Run = %v, want *ops.TimeoutError", err)
		}
		if d := time.Since(start); d > limit+5*time.Second {
			t.Errorf("Run returned after %s, limit %s", d, limit)
		}
	case <-time.After(limit + 20*time.Second):
		t.Fatal("Run still blocked long after its timeout in a paused container")
	}
	// Once the container runs again, the command's tree dies.
	if _, err := cli.ContainerUnpause(t.Context(), b.ID(), client.ContainerUnpauseOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		var out bytes.Buffer
		err := b.Run(t.Context(), &ops.Cmd{Command: "ps -o args | grep -c '^sleep 300' || true", Output: &out})
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(out.String()) == "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sleep 300 still alive 15 s after unpause: %q", out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestDockerFaultEngineUnreachable: a clear transport error at open, fast.
func TestDockerFaultEngineUnreachable(t *testing.T) {
	for _, host := range []string{"unix:///nonexistent/docker.sock", "tcp://127.0.0.1:1"} {
		t.Run(host, func(t *testing.T) {
			cli, err := client.New(client.WithHost(host))
			if err != nil {
				t.Fatal(err)
			}
			defer cli.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			start := time.Now()
			b, err := docker.New(ctx, docker.Config{Image: "pi-sandbox/busybox", Client: cli, Labels: labels()})
			if err == nil {
				b.Close()
				t.Fatal("New succeeded without an engine")
			}
			if !errors.Is(err, ops.ErrTransport) || !strings.Contains(err.Error(), "unreachable") {
				t.Errorf("New = %v, want a transport error saying the engine is unreachable", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("New took %s to fail", d)
			}
		})
	}
}

// TestDockerOOMKilled: a command killed by the cgroup's OOM killer is
// reported as such, not as a plain SIGKILL.
func TestDockerOOMKilled(t *testing.T) {
	needImage(t, "pi-sandbox/busybox")
	b := newBackend(t, docker.Config{Image: "pi-sandbox/busybox", Memory: 64 << 20})
	if slicesContain(b.Info().Limits, "oom_kill") {
		skipOrFail(t, "no oom_kill counter in this cgroup setup")
	}
	// A shell variable that doubles until the memory limit is hit.
	err := b.Run(t.Context(), &ops.Cmd{Command: `a=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; while :; do a=$a$a; done`, Timeout: time.Minute})
	var ee *ops.ExitError
	if !errors.As(err, &ee) || !ee.OOMKilled || ee.Code != 137 {
		t.Fatalf("Run = %v, want an ExitError with OOMKilled and code 137", err)
	}
	if !strings.Contains(ee.Error(), "out of memory") {
		t.Errorf("message %q", ee.Error())
	}
}

func slicesContain(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
