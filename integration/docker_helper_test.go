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
	killClientMidSpin(t, id)
}

// TestDockerShimNotReplaceable: the shim that later calls trust is out of
// the sandbox user's reach — in a container pi-sandbox created on this
// host, on the read-only bind mount of the host's helper cache; in another
// container, root's, uploaded into a root-owned directory of the sticky
// /tmp: a command of the sandbox user can neither overwrite, move nor
// remove it (so it cannot slip a wrapper in front of every later command).
func TestDockerShimNotReplaceable(t *testing.T) {
	needImage(t, "pi-sandbox/busybox")
	for _, tc := range []struct {
		name, dir string
		id        func() string
	}{
		{"mounted", "/opt/pi-sandbox-helper/", func() string { return upContainer(t, "pi-sandbox/busybox", "shim-owner") }},
		{"uploaded", "/tmp/pi-sandbox-bin.", func() string { return plainContainer(t, "shim-owner-plain") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := tc.id()
			b := newBackend(t, docker.Config{Container: id})
			var out bytes.Buffer
			if err := b.Run(t.Context(), &ops.Cmd{Command: "ps -o args | sed -n 's/ __shim serve.*$//p' | head -n1", Output: &out}); err != nil {
				t.Fatal(err)
			}
			shimPath := strings.TrimSpace(out.String())
			if !strings.HasPrefix(shimPath, tc.dir) {
				t.Fatalf("helper runs from %q, want %s* (limits %v)", shimPath, tc.dir, b.Info().Limits)
			}
			for _, attack := range []string{
				": > " + shimPath,
				"cp /bin/sh " + shimPath,
				"mv " + shimPath + " /tmp/moved",
				"rm -f " + shimPath,
				"mv $(dirname " + shimPath + ") /tmp/moved-dir",
				"ln -sf /bin/sh " + shimPath,
			} {
				err := b.Run(t.Context(), &ops.Cmd{Command: attack + " 2>/dev/null"})
				if err == nil {
					t.Errorf("%q succeeded as the sandbox user", attack)
				}
			}
			// A later sandbox in the same container still finds and trusts it.
			b2 := newBackend(t, docker.Config{Container: id})
			if !b2.Info().Has("helper") {
				t.Fatalf("second backend has no helper: %v", b2.Info().Limits)
			}
		})
	}
}

// TestDockerWriteTempNotPredictable: links planted at the temp names the
// file script used to write through ($dir/.pi-sandbox-write.$$, for the
// next pids) are never followed: the write lands in its target and the
// file outside is unchanged, with and without the helper.
func TestDockerWriteTempNotPredictable(t *testing.T) {
	needImage(t, "pi-sandbox/busybox")
	id := upContainer(t, "pi-sandbox/busybox", "write-temp")
	for _, noHelper := range []bool{false, true} {
		t.Run(map[bool]string{false: "helper", true: "nohelper"}[noHelper], func(t *testing.T) {
			b := newBackend(t, docker.Config{Container: id, NoHelper: noHelper})
			w := b.Info().WorkDir
			plant := `mkdir -p /tmp/out && echo ORIGINAL > /tmp/out/victim && p=$(cat /proc/sys/kernel/ns_last_pid) && i=$((p+400)) && while [ $i -lt $((p+800)) ]; do ln -sf /tmp/out/victim ` + w + `/.pi-sandbox-write.$i; i=$((i+1)); done`
			if err := b.Run(t.Context(), &ops.Cmd{Command: plant}); err != nil {
				t.Fatal(err)
			}
			if err := b.WriteFile(t.Context(), w+"/target.txt", []byte("0123456789ABCD\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := b.Run(t.Context(), &ops.Cmd{Command: "cat /tmp/out/victim; cat " + w + "/target.txt; [ -L " + w + "/target.txt ] && echo LINK; rm -f " + w + "/.pi-sandbox-write.*", Output: &out}); err != nil {
				t.Fatal(err)
			}
			if out.String() != "ORIGINAL\n0123456789ABCD\n" {
				t.Errorf("after the write: %q", out.String())
			}
		})
	}
}

// killClientMidSpin starts `pi-sandbox tool bash` with a spinning command
// in container id, SIGKILLs the CLI once the command runs, and waits for
// the command to be gone from the container (at most 5 s).
func killClientMidSpin(t *testing.T, id string) {
	t.Helper()
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

// TestDockerLoginShell: commands on the helper get SHELL as login(1) and
// sshd set it (docker exec does not): exported, with the value bash would
// give the variable itself from the user's passwd entry, so `$SHELL` reads
// the same as on the fallback path, where bash looks the user up at each
// start.
func TestDockerLoginShell(t *testing.T) {
	needImage(t, "pi-sandbox/debian")
	id := upContainer(t, "pi-sandbox/debian", "login-shell")
	const probe = `printf '%s|%s\n' "$SHELL" "$(printenv SHELL)"`
	for _, tc := range []struct {
		noHelper bool
		want     string
	}{
		{false, "/bin/bash|/bin/bash\n"},
		{true, "/bin/bash|\n"}, // bash's own lookup, not exported
	} {
		b := newBackend(t, docker.Config{Container: id, NoHelper: tc.noHelper})
		if b.Info().Has("helper") == tc.noHelper {
			t.Fatalf("NoHelper %v: helper %v (limits %v)", tc.noHelper, b.Info().Has("helper"), b.Info().Limits)
		}
		var out bytes.Buffer
		if err := b.Run(t.Context(), &ops.Cmd{Command: probe, Output: &out}); err != nil {
			t.Fatal(err)
		}
		if out.String() != tc.want {
			t.Errorf("NoHelper %v: SHELL|exported %q, want %q", tc.noHelper, out.String(), tc.want)
		}
	}
}
