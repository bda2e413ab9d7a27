package integration

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

// countInContainer counts the processes whose command line matches the
// grep pattern (write one that does not match itself, like "[e]cho x"),
// through the engine, not the backend under test.
func countInContainer(t *testing.T, id, pattern string) string {
	t.Helper()
	out, err := exec.Command("docker", "exec", id, "sh", "-c", "ps -o args | grep -c '"+pattern+"' || true").CombinedOutput()
	if err != nil {
		t.Fatalf("docker exec ps: %v: %s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// waitNone polls countInContainer until it is "0" or d has passed.
func waitNone(t *testing.T, id, pattern string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		n := countInContainer(t, id, pattern)
		if n == "0" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s processes matching %q still alive %s later", n, pattern, d)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestDockerHelperRestart: after a restart of the container (which empties
// its /tmp, where the helper binary and the sandbox directory live for an
// existing container), the next call starts a new helper and works.
func TestDockerHelperRestart(t *testing.T) {
	needImage(t, "pi-sandbox/busybox")
	id := upContainer(t, "pi-sandbox/busybox", "helper-restart")
	b := newBackend(t, docker.Config{Container: id})
	if !b.Info().Has("helper") {
		t.Fatalf("no helper: %v", b.Info().Limits)
	}
	var out bytes.Buffer
	if err := b.Run(t.Context(), &ops.Cmd{Command: "echo before", Output: &out}); err != nil {
		t.Fatal(err)
	}
	timeout := 5
	if _, err := dockerCli.ContainerRestart(t.Context(), id, client.ContainerRestartOptions{Timeout: &timeout}); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := b.Run(ctx, &ops.Cmd{Command: "echo after", Output: &out}); err != nil {
		t.Fatalf("Run after restart: %v", err)
	}
	if out.String() != "after\n" {
		t.Fatalf("output %q", out.String())
	}
	if err := b.WriteFile(ctx, b.Info().WorkDir+"/f", []byte("x"), 0o644); err != nil {
		t.Fatalf("WriteFile after restart: %v", err)
	}
}

// TestDockerKilledClientKillsCommand: a CLI killed in the middle of a call
// leaves nothing running in the container (issue: the spinner kept a core
// busy past its timeout, since dockerd keeps an exec running without its
// client). With the helper, the lost attachment is EOF on its stdin.
func TestDockerKilledClientKillsCommand(t *testing.T) {
	needImage(t, "pi-sandbox/busybox")
	if piBin == "" {
		skipOrFail(t, "no pi-sandbox binary: "+piBinErr.Error())
	}
	id := upContainer(t, "pi-sandbox/busybox", "killed-client")
	cmd := exec.Command(piBin, "tool", "--backend", "docker", "--container", id, "bash", `{"command":"echo spin-started; while :; do :; done","timeout":60}`)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for countInContainer(t, id, "[e]cho spin-started") == "0" {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the command never started: %s", stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	waitNone(t, id, "[e]cho spin-started", 5*time.Second)
}
