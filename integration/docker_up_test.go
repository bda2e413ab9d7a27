package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

// `up` sandboxes keep one long-lived helper (a daemon in the container,
// reached by each CLI call through `__shim relay`): what a call leaves
// running lives until `down`. Any other container keeps the session rule.

// piUp runs `pi-sandbox up` for the test and downs the container in
// t.Cleanup unless the test did.
func piUp(t *testing.T, purpose string) (id string, downed *bool) {
	t.Helper()
	return piUpImage(t, "pi-sandbox/busybox", purpose)
}

// piUpImage is piUp of image.
func piUpImage(t *testing.T, image, purpose string) (id string, downed *bool) {
	t.Helper()
	needImage(t, image)
	t.Cleanup(func() { checkNoContainers(t, "pi-sandbox.test="+purpose) })
	out, errs, code := pi(t, "", "up", "--image", image, "--label", runLabel+"="+runID, "--label", "pi-sandbox.test="+purpose)
	id = strings.TrimSpace(out)
	if code != 0 || len(id) != 64 {
		t.Fatalf("up: code %d, out %q, err %s", code, out, errs)
	}
	downed = new(bool)
	t.Cleanup(func() {
		if !*downed {
			pi(t, "", "down", id)
		}
	})
	return id, downed
}

// bashIn runs one bash call as its own CLI process in container id and
// returns the result's text.
func bashIn(t *testing.T, id, command string, flags ...string) (text string, isError bool) {
	t.Helper()
	args := append([]string{"tool", "--backend", "docker", "--container", id}, flags...)
	in, _ := json.Marshal(map[string]any{"command": command})
	out, errs, code := pi(t, "", append(args, "bash", string(in))...)
	var res struct {
		Content []struct{ Text string } `json:"content"`
		IsError bool                    `json:"isError"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Content) == 0 {
		t.Fatalf("bash %q: code %d, out %q, err %s", command, code, out, errs)
	}
	return res.Content[0].Text, res.IsError
}

// hostCount counts the host's processes whose command line contains
// marker (the engine runs on this host: container processes are visible).
func hostCount(t *testing.T, marker string) int {
	t.Helper()
	out, _ := exec.Command("ps", "-eo", "args").Output()
	n := 0
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, marker) {
			n++
		}
	}
	return n
}

// TestDockerUpServiceLivesUntilDown: a background service started by one
// CLI call is alive at the next and listed by `ps --json`; a CLI killed in
// the middle of a call loses that call, not the service; down leaves no
// process.
func TestDockerUpServiceLivesUntilDown(t *testing.T) {
	id, downed := piUp(t, "up-service")
	marker := "svc-" + runID
	text, isErr := bashIn(t, id, "sh -c 'while :; do echo "+marker+" >> ticks; sleep 0.1; done' >/dev/null 2>&1 & echo $! > srv.pid; echo started")
	if isErr || text != "started\n" {
		t.Fatalf("start the service: %q (error %v)", text, isErr)
	}
	pid := strings.TrimSpace(mustBash(t, id, "cat srv.pid"))
	n1 := mustBash(t, id, "sleep 0.3; wc -l < ticks")
	n2 := mustBash(t, id, "sleep 0.3; kill -0 "+pid+" && echo alive; wc -l < ticks")
	if !strings.HasPrefix(n2, "alive\n") {
		t.Fatalf("the service died with its CLI call: %q", n2)
	}
	if a, b := atoi(n1), atoi(strings.TrimPrefix(n2, "alive\n")); b <= a {
		t.Errorf("the service stopped writing (%d then %d lines)", a, b)
	}
	out, errs, code := pi(t, "", "ps", "--backend", "docker", "--container", id, "--json")
	if code != 0 || !strings.Contains(out, `"pid":`+pid+`,`) || !strings.Contains(out, marker) {
		t.Fatalf("ps --json: code %d, out %s, err %s", code, out, errs)
	}

	// A client killed mid-call: its command dies, the service does not.
	killClientMidSpin(t, id)
	if got := mustBash(t, id, "kill -0 "+pid+" && echo alive"); got != "alive\n" {
		t.Fatalf("the service died with another client: %q", got)
	}
	// Every client shares the sandbox's one directory: a killed one
	// leaves no directory of its own behind (17.13).
	if out, _ := exec.Command("docker", "exec", id, "sh", "-c", "ls -d /var/lib/pi-sandbox/* /tmp/pi-sandbox-* /var/tmp/pi-sandbox-* 2>/dev/null | grep -v /tmp/pi-sandbox-bin.").Output(); strings.TrimSpace(string(out)) != "/var/lib/pi-sandbox/up-1000" {
		t.Errorf("state directories after a killed client: %q, want /var/lib/pi-sandbox/up-1000 alone", out)
	}
	if n := hostCount(t, marker); n == 0 {
		t.Fatal("the service is not visible on the host: cannot count what down leaves")
	}

	out, errs, code = pi(t, "", "down", id)
	if code != 0 || strings.TrimSpace(out) != id {
		t.Fatalf("down: code %d, out %q, err %s", code, out, errs)
	}
	*downed = true
	if n := hostCount(t, marker); n != 0 {
		t.Errorf("%d processes of the service left after down", n)
	}
	if _, err := dockerCli.ContainerInspect(t.Context(), id, client.ContainerInspectOptions{}); err == nil {
		t.Error("the container is still there after down")
	}
}

func mustBash(t *testing.T, id, command string) string {
	t.Helper()
	text, isErr := bashIn(t, id, command)
	if isErr {
		t.Fatalf("bash %q: %s", command, text)
	}
	return text
}

func atoi(s string) int {
	n, _ := strconv.Atoi(strings.TrimSpace(s))
	return n
}

// plainContainer starts a hardened container that is not an `up` sandbox
// (another kind label), removed in t.Cleanup.
func plainContainer(t *testing.T, purpose string) string {
	t.Helper()
	cli := needImage(t, "pi-sandbox/busybox")
	l := labels()
	l["pi-sandbox.test"] = purpose
	cc, hc, err := docker.HardenedSpec(docker.Config{Image: "pi-sandbox/busybox", Labels: l}, "test-plain", 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cc, HostConfig: hc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := docker.Down(context.Background(), cli, res.ID); err != nil {
			t.Error(err)
		}
		checkNoContainers(t, "pi-sandbox.test="+purpose)
	})
	if _, err := cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	return res.ID
}

// TestDockerUpPlainContainerSessionRule: on a container that `up` did not
// create, background processes live as long as the session: one CLI call.
func TestDockerUpPlainContainerSessionRule(t *testing.T) {
	id := plainContainer(t, "up-plain")
	if text, _ := bashIn(t, id, "cd /tmp; sleep 1000 & echo $! > /tmp/bg.pid; echo started"); text != "started\n" {
		t.Fatalf("start: %q", text)
	}
	pid := strings.TrimSpace(mustBash(t, id, "cat /tmp/bg.pid"))
	deadline := time.Now().Add(3 * time.Second)
	for mustBash(t, id, "kill -0 "+pid+" 2>/dev/null && echo alive || echo dead") != "dead\n" {
		if time.Now().After(deadline) {
			t.Fatalf("background process %s of a finished CLI call alive 3 s later", pid)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := countInContainer(t, id, "[_]_shim serve --listen"); n != "0" {
		t.Errorf("%s helper daemons in a plain container", n)
	}
}

// TestDockerUpLimitAcrossClients: the limit of background process groups
// counts every CLI call's, and the call over it says so.
func TestDockerUpLimitAcrossClients(t *testing.T) {
	id, _ := piUp(t, "up-limit")
	for i := range 2 {
		if text, isErr := bashIn(t, id, "sleep 1000 & echo "+strconv.Itoa(i), "--max-background", "2"); isErr {
			t.Fatalf("call %d: %s", i, text)
		}
	}
	text, isErr := bashIn(t, id, "sleep 1001 & echo third", "--max-background", "2")
	if !isErr || !strings.Contains(text, "2 background process groups") {
		t.Fatalf("third call: %q (error %v), want the limit", text, isErr)
	}
	waitNone(t, id, "[s]leep 1001", 3*time.Second)
	if n := countInContainer(t, id, "^[s]leep 1000"); n != "2" {
		t.Errorf("%s of the first two calls' processes alive, want 2", n)
	}
}

// TestDockerUpConcurrentStartOneDaemon: CLI calls racing on a fresh up
// sandbox start one daemon.
func TestDockerUpConcurrentStartOneDaemon(t *testing.T) {
	id, _ := piUp(t, "up-race")
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if text, isErr := bashIn(t, id, "echo ok"); isErr || text != "ok\n" {
				t.Errorf("bash: %q (error %v)", text, isErr)
			}
		}()
	}
	wg.Wait()
	if n := countInContainer(t, id, "[_]_shim serve --listen"); n != "1" {
		t.Errorf("%s helper daemons after concurrent first calls, want 1", n)
	}
}

// TestDockerUpFullTmp: with /tmp full, an up sandbox still runs commands
// (its state is in the up volume), with and without the helper; where the
// state is on the full /tmp (a plain container, no helper), the command
// says it could not start instead of looking like it failed.
func TestDockerUpFullTmp(t *testing.T) {
	id, _ := piUp(t, "up-fulltmp")
	mustBash(t, id, "echo warm") // the shim is uploaded, the daemon started
	fill(t, id)
	if text, isErr := bashIn(t, id, "echo works"); isErr || text != "works\n" {
		t.Fatalf("bash with /tmp full: %q (error %v)", text, isErr)
	}
	b := newBackend(t, docker.Config{Container: id, NoHelper: true})
	var out bytes.Buffer
	if err := b.Run(t.Context(), &ops.Cmd{Command: "echo fallback", Output: &out}); err != nil || out.String() != "fallback\n" {
		t.Fatalf("fallback Run with /tmp full: %q, %v", out.String(), err)
	}
	if text, isErr := bashIn(t, id, "rm /tmp/fill && echo freed"); isErr || text != "freed\n" {
		t.Fatalf("rm: %q (error %v)", text, isErr)
	}

	plain := plainContainer(t, "up-fulltmp-plain")
	pb := newBackend(t, docker.Config{Container: plain, NoHelper: true})
	// Its sandbox directory (the pid files) is in /tmp: no up volume.
	if out, err := exec.Command("docker", "exec", plain, "sh", "-c", "ls -d /tmp/pi-sandbox-*/run").CombinedOutput(); err != nil {
		t.Fatalf("the plain container's sandbox directory is not in /tmp: %v: %s", err, out)
	}
	fill(t, plain)
	err := pb.Run(t.Context(), &ops.Cmd{Command: "echo hi"})
	var se *ops.StartError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "could not start") || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("Run with the state directory full = %v, want could not start: no space left on device", err)
	}
}

// fill fills the container's /tmp.
func fill(t *testing.T, id string) {
	t.Helper()
	exec.Command("docker", "exec", id, "dd", "if=/dev/zero", "of=/tmp/fill", "bs=1M", "count=1024").Run()
	out, _ := exec.Command("docker", "exec", id, "sh", "-c", "df /tmp | tail -n1").Output()
	if f := strings.Fields(string(out)); len(f) < 4 || f[3] != "0" {
		t.Fatalf("/tmp is not full: %s", out)
	}
}

// daemonInContainer returns the pid, binary and directory of the one
// helper daemon in container id.
func daemonInContainer(t *testing.T, id string) (pid, bin, dir string) {
	t.Helper()
	out, err := exec.Command("docker", "exec", id, "sh", "-c", "ps -o pid,args | grep '[_]_shim serve --listen'").CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err != nil || len(lines) != 1 {
		t.Fatalf("helper daemons in the container: %v: %q", err, out)
	}
	f := strings.Fields(lines[0])
	if len(f) < 6 {
		t.Fatalf("daemon line %q", lines[0])
	}
	return f[0], f[1], f[5]
}

// TestDockerUpKeylessDaemonReplaced: a daemon a command of the sandbox
// user starts itself (it cannot know the sandbox's helper key) is not
// trusted: the next CLI call stops it and starts its own.
func TestDockerUpKeylessDaemonReplaced(t *testing.T) {
	id, _ := piUp(t, "up-keyless")
	mustBash(t, id, "echo warm")
	_, bin, dir := daemonInContainer(t, id)
	script := bin + " __shim relay --stop " + dir + " && " + bin + " __shim relay " + dir + " </dev/null"
	if out, err := exec.Command("docker", "exec", "-u", "1000:1000", id, "sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("start a keyless daemon: %v: %s", err, out)
	}
	keyless, _, _ := daemonInContainer(t, id)
	if got := mustBash(t, id, "echo hi"); got != "hi\n" {
		t.Fatalf("bash: %q", got)
	}
	now, _, _ := daemonInContainer(t, id)
	if now == keyless {
		t.Fatalf("the CLI trusted the keyless daemon %s", keyless)
	}
}
