package integration

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

// TestDockerSessionStartsInOneExec: a session on a container that holds
// the shim already starts with one exec (the probe's exec goes on as the
// helper), and its commands start none.
func TestDockerSessionStartsInOneExec(t *testing.T) {
	needImage(t, "pi-sandbox/debian")
	ctx := context.Background()
	first, err := docker.New(ctx, docker.Config{Image: "pi-sandbox/debian", Labels: labels()})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if !first.Info().Has("helper") {
		t.Fatalf("the first session has no helper: %v", first.Info().Limits)
	}
	since := time.Now()
	b, err := docker.New(ctx, docker.Config{Container: first.ID()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !b.Info().Has("helper") {
		t.Fatalf("the session has no helper: %v", b.Info().Limits)
	}
	for range 3 {
		if err := b.Run(ctx, &ops.Cmd{Command: "true", Output: io.Discard}); err != nil {
			t.Fatal(err)
		}
	}
	until := time.Now()
	out, err := exec.Command("docker", "events", "--since", eventTime(since), "--until", eventTime(until),
		"--filter", "container="+first.ID(), "--filter", "event=exec_create", "--format", "{{.Action}}").CombinedOutput()
	if err != nil {
		t.Fatalf("docker events: %v: %s", err, out)
	}
	if n := strings.Count(string(out), "exec_create"); n != 1 {
		t.Fatalf("the session's start and 3 commands created %d execs, want 1:\n%s", n, out)
	}
}

func eventTime(t time.Time) string { return fmt.Sprintf("%d.%09d", t.Unix(), t.Nanosecond()) }
