package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/docker"
	"github.com/pi-sandbox/pi-sandbox/ops/shim"
)

// execCreates counts the engine's exec_create events of container id
// between since and until.
func execCreates(t *testing.T, id string, since, until time.Time) int {
	t.Helper()
	ts := func(t time.Time) string { return fmt.Sprintf("%d.%09d", t.Unix(), t.Nanosecond()) }
	out, err := exec.Command("docker", "events", "--since", ts(since), "--until", ts(until), "--filter", "container="+id,
		"--filter", "event=exec_create", "--format", "{{.Action}}").Output()
	if err != nil {
		t.Fatalf("docker events: %v", err)
	}
	return strings.Count(string(out), "exec_create")
}

// hostSockDir is the host directory an up container has at shim.HostDir.
func hostSockDir(t *testing.T, id string) string {
	t.Helper()
	out, err := exec.Command("docker", "inspect", "--format", `{{range .Mounts}}{{if eq .Destination "`+shim.HostDir+`"}}{{.Source}}{{end}}{{end}}`, id).Output()
	if err != nil {
		t.Fatalf("docker inspect: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// TestDockerUpHostSocket: an up sandbox (runc, engine on this host) has a
// directory of this host at shim.HostDir where its helper daemon listens;
// once the daemon runs, a backend on it starts and calls with no exec at
// all; a socket a sandbox process put in the daemon's place is not
// trusted (the relay's exec serves, and Info says why); down removes the
// host directory.
func TestDockerUpHostSocket(t *testing.T) {
	id, downed := piUpImage(t, "pi-sandbox/debian", "hostsock")
	dir := hostSockDir(t, id)
	if dir == "" {
		t.Fatalf("the up container has no mount at %s", shim.HostDir)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("host directory %s: %v, %v", dir, fi, err)
	}
	if fi, err := os.Stat(dir + "/.."); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("its parent: %v, %v (want mode 0700)", fi, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := func(what, command string) (string, ops.Info) {
		t.Helper()
		b := newBackend(t, docker.Config{Container: id})
		var out bytes.Buffer
		if err := b.Run(ctx, &ops.Cmd{Command: command, Output: &out}); err != nil {
			t.Fatalf("%s: Run = %v, %q", what, err, out.String())
		}
		info := b.Info()
		b.Close()
		return out.String(), info
	}
	run("first (starts the daemon)", "true")
	if _, err := os.Stat(dir + "/" + shim.HostSocket); err != nil {
		t.Fatalf("no daemon socket on the host: %v", err)
	}
	since := time.Now()
	for i := range 3 {
		if out, _ := run("over the host socket", "echo "+strconv.Itoa(i)); out != strconv.Itoa(i)+"\n" {
			t.Fatalf("output %q", out)
		}
	}
	if n := execCreates(t, id, since, time.Now()); n != 0 {
		t.Errorf("%d execs for three backends on an up sandbox with a host socket, want 0", n)
	}

	// A sandbox process replaces the socket with its own listener, which
	// answers like a daemon (it cannot prove the key).
	imp := `use IO::Socket::UNIX; unlink "` + shim.HostDir + `/helper.sock";
my $s = IO::Socket::UNIX->new(Local => "` + shim.HostDir + `/helper.sock", Listen => 5) or die "listen: $!";
open(my $r, ">", "/tmp/imp.ready"); close $r;
while (my $c = $s->accept) { my $n = <$c>; print $c "pi-sandbox-helper 00 7 00\n"; close $c }`
	b := newBackend(t, docker.Config{Container: id})
	if err := b.Run(ctx, &ops.Cmd{Command: "perl -e '" + imp + "' >/tmp/imp.log 2>&1 &\nfor i in $(seq 100); do [ -f /tmp/imp.ready ] && exit 0; sleep 0.05; done; cat /tmp/imp.log; exit 1", Output: os.Stderr}); err != nil {
		t.Fatalf("impostor: %v", err)
	}
	b.Close()
	out, info := run("with an impostor on the host socket", "echo relayed")
	if out != "relayed\n" {
		t.Fatalf("output %q", out)
	}
	if !strings.Contains(strings.Join(info.Limits, "\n"), "host socket failed a check") {
		t.Errorf("Info.Limits %q does not say the host socket was refused", info.Limits)
	}

	// The socket's name made a link to a socket of the host (resolved on
	// the host when it connects): the engine's own socket is sent nothing.
	b = newBackend(t, docker.Config{Container: id})
	if err := b.Run(ctx, &ops.Cmd{Command: "ln -sfn /var/run/docker.sock " + shim.HostDir + "/" + shim.HostSocket, Output: os.Stderr}); err != nil {
		t.Fatalf("link: %v", err)
	}
	b.Close()
	out, info = run("with the socket's name a link to the engine's socket", "echo relayed")
	if out != "relayed\n" {
		t.Fatalf("output %q", out)
	}
	if !strings.Contains(strings.Join(info.Limits, "\n"), "pid namespace") {
		t.Errorf("Info.Limits %q does not say the host socket's peer is in another pid namespace", info.Limits)
	}

	if _, errs, code := pi(t, "", "down", id); code != 0 {
		t.Fatalf("down: %d %s", code, errs)
	}
	*downed = true
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("down left the host directory %s: %v", dir, err)
	}
}
