package integration

import (
	"bytes"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

// pi runs the static pi-sandbox binary built by TestMain.
func pi(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	stdout, stderr, code, _ = piPID(t, stdin, args...)
	return
}

// piPID is pi that also returns the process id (ephemeral containers carry
// it in their pi-sandbox.pid label).
func piPID(t *testing.T, stdin string, args ...string) (stdout, stderr string, code, pid int) {
	t.Helper()
	if piBin == "" {
		skipOrFail(t, "no pi-sandbox binary: "+piBinErr.Error())
	}
	cmd := exec.Command(piBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code, cmd.Process.Pid
}

// TestDockerCLILifecycle: up prints an id, ls lists it, tools run in it
// with --container, down removes it; tool --image runs in an ephemeral
// container that is gone afterwards.
func TestDockerCLILifecycle(t *testing.T) {
	needImage(t, "pi-sandbox/busybox")
	t.Cleanup(func() { checkNoContainers(t, "pi-sandbox.test=cli") })
	out, errs, code := pi(t, "", "up", "--image", "pi-sandbox/busybox", "--label", runLabel+"="+runID, "--label", "pi-sandbox.test=cli")
	id := strings.TrimSpace(out)
	if code != 0 || len(id) != 64 {
		t.Fatalf("up: code %d, out %q, err %s", code, out, errs)
	}
	downed := false
	t.Cleanup(func() {
		if !downed {
			pi(t, "", "down", id)
		}
	})
	out, errs, code = pi(t, "", "ls")
	if code != 0 || !strings.Contains(out, id[:12]) || !strings.Contains(out, "sandbox") {
		t.Fatalf("ls: code %d, out %q, err %s", code, out, errs)
	}
	out, errs, code = pi(t, "", "tool", "--backend", "docker", "--container", id, "bash", `{"command":"echo hi; id -u"}`)
	if code != 0 || !strings.Contains(out, `"text":"hi\n1000\n"`) {
		t.Fatalf("tool --container: code %d, out %s, err %s", code, out, errs)
	}
	out, errs, code = pi(t, "", "down", id)
	if code != 0 || strings.TrimSpace(out) != id {
		t.Fatalf("down: code %d, out %q, err %s", code, out, errs)
	}
	downed = true
	out, _, _ = pi(t, "", "ls", "-q")
	if strings.Contains(out, id) {
		t.Errorf("ls after down still lists %s", id[:12])
	}
	// A container without our label is refused by down.
	if _, errs, code = pi(t, "", "down", "no-such-container"); code == 0 || errs == "" {
		t.Errorf("down of a missing container: code %d, err %q", code, errs)
	}

	out, errs, code, pid := piPID(t, "", "tool", "--backend", "docker", "--image", "pi-sandbox/busybox", "bash", `{"command":"echo hi"}`)
	if code != 0 || out != `{"content":[{"type":"text","text":"hi\n"}],"isError":false}`+"\n" {
		t.Fatalf("tool --image: code %d, out %q, err %s", code, out, errs)
	}
	left, err := docker.List(t.Context(), dockerCli, docker.LabelPID+"="+strconv.Itoa(pid))
	if err != nil || len(left) != 0 {
		t.Errorf("tool --image left %d containers (%v)", len(left), err)
		for _, s := range left {
			docker.Down(t.Context(), dockerCli, s.ID)
		}
	}
}

// TestDockerCLIDoctor: the engine and image lines pass here.
func TestDockerCLIDoctor(t *testing.T) {
	needImage(t, "pi-sandbox/busybox")
	out, errs, _ := pi(t, "", "doctor")
	for _, want := range []string{"ok    engine", "ok    shim"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s%s", want, out, errs)
		}
	}
}
