package integration

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"regexp"
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
	ctx := context.Background()
	first := shimContainer(t)
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
	if n := execsCreated(t, first.ID(), since, time.Now()); n != 1 {
		t.Fatalf("the session's start and 3 commands created %d execs, want 1", n)
	}
}

// shimContainer is an ephemeral container whose first session uploaded
// the shim and ran the helper.
func shimContainer(t *testing.T) *docker.Backend {
	t.Helper()
	needImage(t, "pi-sandbox/debian")
	first, err := docker.New(context.Background(), docker.Config{Image: "pi-sandbox/debian", Labels: labels()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { first.Close() })
	if !first.Info().Has("helper") {
		t.Fatalf("the first session has no helper: %v", first.Info().Limits)
	}
	return first
}

// execsCreated counts the execs the engine created in container id
// between since and until.
func execsCreated(t *testing.T, id string, since, until time.Time) int {
	t.Helper()
	out, err := exec.Command("docker", "events", "--since", eventTime(since), "--until", eventTime(until),
		"--filter", "container="+id, "--filter", "event=exec_create", "--format", "{{.Action}}").CombinedOutput()
	if err != nil {
		t.Fatalf("docker events: %v: %s", err, out)
	}
	return strings.Count(string(out), "exec_create")
}

func eventTime(t time.Time) string { return fmt.Sprintf("%d.%09d", t.Unix(), t.Nanosecond()) }

// sandboxDirs lists the per-session sandbox directories in the container
// (pi-sandbox-SUFFIX in /tmp or /var/tmp; not the shim's or the spill base).
func sandboxDirs(t *testing.T, id string) []string {
	t.Helper()
	out, err := exec.Command("docker", "exec", id, "sh", "-c", "ls -d /var/tmp/pi-sandbox-* /tmp/pi-sandbox-* 2>/dev/null; true").CombinedOutput()
	if err != nil {
		t.Fatalf("ls: %v: %s", err, out)
	}
	var dirs []string
	for _, d := range strings.Fields(string(out)) {
		if sandboxDir.MatchString(d) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

var sandboxDir = regexp.MustCompile(`/pi-sandbox-[0-9a-f]{12}$`)

// TestDockerCloseEndsInStream: closing a session on an existing container
// removes its sandbox directory through the helper (no exec), and, when
// the helper is gone, with an exec as before.
func TestDockerCloseEndsInStream(t *testing.T) {
	ctx := context.Background()
	first := shimContainer(t)
	for _, killHelper := range []bool{false, true} {
		b, err := docker.New(ctx, docker.Config{Container: first.ID()})
		if err != nil {
			t.Fatal(err)
		}
		if !b.Info().Has("helper") {
			b.Close()
			t.Fatalf("the session has no helper: %v", b.Info().Limits)
		}
		if d := sandboxDirs(t, first.ID()); len(d) != 1 {
			b.Close()
			t.Fatalf("sandbox directories while open: %v, want one", d)
		}
		if killHelper {
			// The helper runs the shell that runs this: its parent's parent.
			if err := b.Run(ctx, &ops.Cmd{Command: "kill -9 $(awk '{print $4}' /proc/$PPID/stat)", Output: io.Discard}); err == nil {
				t.Log("the kill's own call returned no error")
			}
		}
		since := time.Now()
		if err := b.Close(); err != nil {
			t.Errorf("Close (helper killed %v) = %v", killHelper, err)
		}
		until := time.Now()
		if d := sandboxDirs(t, first.ID()); len(d) != 0 {
			t.Errorf("sandbox directories after Close (helper killed %v): %v", killHelper, d)
		}
		want := 0
		if killHelper {
			want = 1 // the rm of the fallback
		}
		if n := execsCreated(t, first.ID(), since, until); n != want {
			t.Errorf("Close (helper killed %v) created %d execs, want %d", killHelper, n, want)
		}
	}
}
