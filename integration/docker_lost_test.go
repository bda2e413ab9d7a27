package integration

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

// lostMidCall runs a command through the helper, does what to the
// container once it runs, and returns the command's error.
func lostMidCall(t *testing.T, purpose string, what func(id string) error) error {
	t.Helper()
	needImage(t, "pi-sandbox/busybox")
	id := upContainer(t, "pi-sandbox/busybox", purpose)
	b := newBackend(t, docker.Config{Container: id})
	if !b.Info().Has("helper") {
		t.Fatalf("no helper: %v", b.Info().Limits)
	}
	out := newReadySink()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- b.Run(ctx, &ops.Cmd{Command: "echo ready; sleep 60", Output: out}) }()
	select {
	case <-out.ready:
	case err := <-errc:
		t.Fatalf("Run ended before ready: %v", err)
	}
	if err := what(id); err != nil {
		t.Fatal(err)
	}
	err := <-errc
	if err == nil {
		t.Fatal("Run succeeded")
	}
	if !errors.Is(err, ops.ErrTransport) {
		t.Errorf("error %v is no transport failure", err)
	}
	return err
}

// TestDockerKilledMidCall: a container killed under a call says so, with
// its exit code, rather than "unexpected EOF".
func TestDockerKilledMidCall(t *testing.T) {
	err := lostMidCall(t, "killed-mid-call", func(id string) error {
		_, err := dockerCli.ContainerKill(t.Context(), id, client.ContainerKillOptions{Signal: "KILL"})
		return err
	})
	if !strings.Contains(err.Error(), "stopped (exited with 137)") {
		t.Fatalf("error %q does not say the container stopped", err)
	}
}

// TestDockerRestartedMidCall: a container restarted under a call says so.
func TestDockerRestartedMidCall(t *testing.T) {
	err := lostMidCall(t, "restarted-mid-call", func(id string) error {
		timeout := 0
		_, err := dockerCli.ContainerRestart(t.Context(), id, client.ContainerRestartOptions{Timeout: &timeout})
		return err
	})
	if !strings.Contains(err.Error(), "was restarted") {
		t.Fatalf("error %q does not say the container was restarted", err)
	}
}
