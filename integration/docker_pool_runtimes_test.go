package integration

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

// poolCore is the core of a pool on one engine and runtime: fill 2, a
// claim serves a call (in a member that runs under the pool's runtime,
// with its lifetime's PID 1 when it has one), drain removes the idle
// member, down the claimed one, and the pool is gone. cli is the engine
// the CLI reaches (for the cleanup).
func poolCore(t *testing.T, cli *client.Client, name string, flags []string, check func(id string)) {
	t.Helper()
	t.Cleanup(func() {
		pi(t, "", "pool", "drain", name)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		members, _ := docker.PoolMembers(ctx, cli, name)
		for _, m := range members {
			t.Errorf("member %.12s left after the test", m.ID)
			docker.Down(ctx, cli, m.ID)
		}
	})
	filled := poolFill(t, name, 2, flags...)
	if len(filled) != 2 {
		t.Fatalf("fill printed %q, want 2 ids", filled)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if members, err := docker.PoolMembers(ctx, cli, name); err != nil || len(members) != 2 {
		t.Fatalf("the engine lists %d members of %s (%v), want the 2 filled", len(members), name, err)
	}
	id, code, errs := claim(t, name)
	if code != 0 || (id != filled[0] && id != filled[1]) {
		t.Fatalf("claim: code %d, id %q (filled %q), err %s", code, id, filled, errs)
	}
	out, errs, code := pi(t, "", "tool", "--container", id, "--text", "bash", `{"command":"echo claimed-ok"}`)
	if code != 0 || strings.TrimSpace(out) != "claimed-ok" {
		t.Fatalf("a call in the claimed member: code %d, out %q, err %s", code, out, errs)
	}
	check(id)
	if drained, errs, code := pi(t, "", "pool", "drain", name); code != 0 || len(strings.Fields(drained)) != 1 {
		t.Fatalf("drain: code %d, out %q, err %s", code, drained, errs)
	}
	if _, errs, code := pi(t, "", "down", id); code != 0 {
		t.Fatalf("down: %d %s", code, errs)
	}
	if r, listed := poolLs(t, name); listed {
		t.Fatalf("the pool is still listed: %+v", r)
	}
}

// TestRunscPool: a pool under gVisor with a time to live; the claimed
// member runs on runsc with the helper as its PID 1.
func TestRunscPool(t *testing.T) {
	needRuntime(t, "pi-sandbox/busybox", runsc)
	name := "pool-runsc-" + runID
	flags := []string{"--image", "pi-sandbox/busybox", "--runtime", runsc, "--ttl", "10m",
		"--label", runLabel + "=" + runID, "--label", "pi-sandbox.test=pool-runsc"}
	poolCore(t, dockerCli, name, flags, func(id string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := dockerCli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rt := c.Container.HostConfig.Runtime; rt != runsc {
			t.Errorf("the claimed member runs on %q, want %s", rt, runsc)
		}
		out, _, _ := pi(t, "", "tool", "--container", id, "--text", "bash", `{"command":"tr '\\0' ' ' < /proc/1/cmdline"}`)
		if !strings.Contains(out, "__shim keep") {
			t.Errorf("PID 1 of a member with a time to live: %q, want the helper's keep", out)
		}
	})
	checkNoContainers(t, "pi-sandbox.test=pool-runsc")
}

// TestPodmanPool: the same pool through Podman's Docker-compatible
// service (the CLI reaches it through DOCKER_HOST).
func TestPodmanPool(t *testing.T) {
	cli := podmanClient(t)
	t.Setenv("DOCKER_HOST", os.Getenv("PI_SANDBOX_PODMAN_HOST"))
	name := "pool-podman-" + runID
	flags := []string{"--image", "pi-sandbox/busybox", "--label", runLabel + "=" + runID, "--label", "pi-sandbox.test=pool-podman"}
	poolCore(t, cli, name, flags, func(string) {})
}
