package integration

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/docker"
	"github.com/pi-sandbox/pi-sandbox/ops/opstest"
)

// podmanGaps are what the docker backend without the helper does not get
// from Podman 4.3's Docker-compatible API (Debian 12, rootful, cgroup v1);
// the README lists them. Both are races, so the cases are skipped rather
// than expected to fail.
var podmanGaps = opstest.Gaps{
	Skip: map[string]string{
		// An exec with stdin attached whose process exits before reading
		// all of it may lose its output: the attach ends with "connection
		// reset by peer", and a failing file script's status line is lost.
		"WriteFile/OnDirectory":       podmanStdinGap,
		"WriteFile/ReadOnlyFile":      podmanStdinGap,
		"WriteFile/ReadOnlyDirectory": podmanStdinGap,
		"WriteFile/MissingParent":     podmanStdinGap,
		"OpenWriter/MissingParent":    podmanStdinGap,
		"OpenWriter/ExclExisting":     podmanStdinGap,
		// Sometimes the exec is reported running while a background
		// process holds its output, so a shell that exited is reported as
		// a plain timeout.
		"Run/TimeoutAfterShellExit": "the shell's exit is sometimes not seen while a background process writes",
	},
}

const podmanStdinGap = "the output of an exec that leaves stdin unread may be lost"

// podmanClient returns a client of the Podman service PI_SANDBOX_PODMAN_HOST
// names (.ci/podman starts one, and .ci/run sets the variable). Without it
// the test skips, and fails under CI=true.
func podmanClient(t *testing.T) *client.Client {
	t.Helper()
	needImage(t, "pi-sandbox/busybox")
	host := os.Getenv("PI_SANDBOX_PODMAN_HOST")
	if host == "" {
		testenv.SkipOrFail(t, "PI_SANDBOX_PODMAN_HOST is not set (make podman starts Podman's service and prints it)")
	}
	cli, err := client.New(client.FromEnv, client.WithHost(host))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := docker.Ping(ctx, cli); err != nil {
		t.Fatal(err)
	}
	return cli
}

// TestPodmanConformance runs the ops conformance suite through the docker
// backend against Podman's service, in one hardened busybox container
// (loaded from Docker by .ci/podman), expecting exactly podmanGaps.
func TestPodmanConformance(t *testing.T) {
	cli := podmanClient(t)
	id := podmanUp(t, cli, "conformance-podman")
	// Before podmanUp's removal of id: every other container of the
	// run's label is one a backend left behind.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		list, err := docker.List(ctx, cli, runLabel+"="+runID)
		if err != nil {
			t.Error(err)
		}
		for _, s := range list {
			if s.ID == id {
				continue
			}
			t.Errorf("container %.12s left behind in Podman", s.ID)
			docker.Down(ctx, cli, s.ID)
		}
	})
	open := func(noHelper bool) func(t *testing.T) ops.Backend {
		return func(t *testing.T) ops.Backend {
			b := newBackend(t, docker.Config{Client: cli, Container: id, NoHelper: noHelper})
			if got := b.Info().Has("helper"); got == noHelper {
				t.Fatalf("helper capability %v, want %v (limits %v)", got, !noHelper, b.Info().Limits)
			}
			return b
		}
	}
	// With the helper every operation crosses its one exec's stream, which
	// none of the gaps touches: the whole suite. Without it (one exec per
	// operation, the fallback) the gaps show; the core cases run, as in
	// TestDockerConformance.
	t.Run("helper", func(t *testing.T) { opstest.TestBackend(t, open(false)) })
	t.Run("nohelper", func(t *testing.T) { opstest.TestBackendCore(t, open(true), podmanGaps) })
}

// TestPodmanNetwork: egress, inject and Dial (checkNetwork) through the
// helper of a hardened container in Podman.
func TestPodmanNetwork(t *testing.T) {
	cli := podmanClient(t)
	id := podmanUp(t, cli, "network-podman")
	checkNetwork(t, newBackend(t, docker.Config{Client: cli, Container: id}))
}

// podmanUp makes a hardened busybox `up` container in Podman, removed at
// the test's end (registered before the caller's cleanups, so it runs
// after them).
func podmanUp(t *testing.T, cli *client.Client, purpose string) string {
	t.Helper()
	l := labels()
	l["pi-sandbox.test"] = purpose
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id, err := docker.Up(ctx, docker.Config{Client: cli, Image: "pi-sandbox/busybox", Labels: l})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := docker.Down(ctx, cli, id); err != nil {
			t.Error(err)
		}
	})
	return id
}
