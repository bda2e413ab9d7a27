package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDockerFork: fork --count 4 of a bind-mounted up sandbox makes four
// sandboxes whose working directory is a fresh volume holding the
// checkpoint (a write there does not reach the source's host directory),
// with the source's user and limits; bad input is refused.
func TestDockerFork(t *testing.T) {
	needImage(t, "pi-sandbox/busybox")
	host := t.TempDir()
	os.Chmod(host, 0o777)
	t.Cleanup(func() { checkNoContainers(t, "pi-sandbox.test=fork") })
	out, errs, code := pi(t, "", "up", "--image", "pi-sandbox/busybox", "--mount", host+":/workspace", "--user", "1000:1000", "--memory", "256m",
		"--label", runLabel+"="+runID, "--label", "pi-sandbox.test=fork")
	src := strings.TrimSpace(out)
	if code != 0 || len(src) != 64 {
		t.Fatalf("up: code %d, out %q, err %s", code, out, errs)
	}
	t.Cleanup(func() { pi(t, "", "down", src) })
	mustBash(t, src, `mkdir -p d/empty && echo base > d/f && chmod 640 d/f && ln -s d/f link`)
	if _, errs, code = pi(t, "", "checkpoint", "--name", "prepared", "--container", src); code != 0 {
		t.Fatalf("checkpoint: code %d, %s", code, errs)
	}
	mustBash(t, src, `echo later > d/f`) // after the checkpoint: not in the forks

	out, errs, code = pi(t, "", "fork", "--count", "4", "prepared", "--container", src)
	ids := strings.Fields(out)
	for _, id := range ids {
		t.Cleanup(func() { pi(t, "", "down", id) })
	}
	if code != 0 || len(ids) != 4 || strings.Count(out, "\n") != 4 {
		t.Fatalf("fork --count 4: code %d, out %q, err %s", code, out, errs)
	}
	for _, id := range ids {
		got := mustBash(t, id, `cat d/f; stat -c '%a' d/f; readlink link; ls -d d/empty; id -u; echo fork > mine`)
		if want := "base\n640\nd/f\nd/empty\n1000\n"; got != want {
			t.Errorf("fork %s: %q, want %q", id[:12], got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(host, "mine")); !os.IsNotExist(err) {
		t.Errorf("a fork wrote into the source's bind mount: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(host, "d/f")); string(b) != "later\n" {
		t.Errorf("the source's file is %q", b)
	}
	for _, id := range ids {
		b, err := exec.Command("docker", "inspect", "-f", `{{.HostConfig.Memory}} {{index .Config.Labels "pi-sandbox.fork-of"}} {{index .Config.Labels "pi-sandbox.test"}}`, id).Output()
		if want := "268435456 " + src + " fork\n"; err != nil || string(b) != want {
			t.Errorf("fork %s: memory, fork-of and test labels %q (%v), want %q", id[:12], b, err, want)
		}
	}

	if _, errs, code = pi(t, "", "fork", "--count", "0", "prepared", "--container", src); code != 2 || !strings.Contains(errs, "--count 0") {
		t.Errorf("fork --count 0: code %d, %s", code, errs)
	}
	if _, errs, code = pi(t, "", "fork", "--count", "2", "prepared"); code != 2 || !strings.Contains(errs, "--container") {
		t.Errorf("fork without a source: code %d, %s", code, errs)
	}
	out, errs, code = pi(t, "", "fork", "--count", "2", "nope", "--container", src)
	if code != 1 || out != "" || !strings.Contains(errs, "no such checkpoint") {
		t.Errorf("fork of an unknown checkpoint: code %d, out %q, %s", code, out, errs)
	}
}

// TestDockerForkPool: fork --pool claims the sandboxes from a pool (its
// configuration applies) and fills their working directory.
func TestDockerForkPool(t *testing.T) {
	id, _ := piUp(t, "fork-pool-src")
	mustBash(t, id, `echo seed > seed.txt`)
	if _, errs, code := pi(t, "", "checkpoint", "--name", "seed", "--container", id); code != 0 {
		t.Fatalf("checkpoint: code %d, %s", code, errs)
	}
	name, flags := newPool(t, "fork-pool")
	members := poolFill(t, name, 2, flags...)
	out, errs, code := pi(t, "", "fork", "--pool", name, "--count", "2", "seed", "--container", id)
	ids := strings.Fields(out)
	if code != 0 || len(ids) != 2 {
		t.Fatalf("fork --pool: code %d, out %q, err %s", code, out, errs)
	}
	for _, f := range ids {
		if !slices.Contains(members, f) {
			t.Errorf("fork %s is not one of the pool's members %v", f, members)
		}
		if got := mustBash(t, f, `cat seed.txt`); got != "seed\n" {
			t.Errorf("fork %s: seed.txt %q", f[:12], got)
		}
	}
}
