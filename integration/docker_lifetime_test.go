package integration

import (
	"context"
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

// Lifetimes: a sandbox ends itself (its PID 1, in the container) when its
// time to live or idle timeout passes, with no pi-sandbox process left, and
// the engine removes it with its volumes; an --image session's container
// ends with its client.

// upLifetime runs up with flags and returns the id and the names of the
// container's volumes.
func upLifetime(t *testing.T, purpose string, flags ...string) (string, []string) {
	t.Helper()
	needImage(t, "pi-sandbox/busybox")
	t.Cleanup(func() { leftoversOf(t, purpose) })
	args := append([]string{"up", "--image", "pi-sandbox/busybox", "--label", runLabel + "=" + runID, "--label", "pi-sandbox.test=" + purpose}, flags...)
	out, errs, code := pi(t, "", args...)
	id := strings.TrimSpace(out)
	if code != 0 || len(id) != 64 {
		t.Fatalf("up %q: code %d, out %q, err %s", flags, code, out, errs)
	}
	res, err := dockerCli.ContainerInspect(t.Context(), id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vols := volumesOf(res.Container.Mounts)
	if len(vols) != 2 {
		t.Fatalf("container %.12s has volumes %q, want the workspace's and the state's", id, vols)
	}
	return id, vols
}

// volumesOf lists the names of the volumes among a container's mounts (not
// its bind mounts, such as the helper's).
func volumesOf(mounts []container.MountPoint) []string {
	var vols []string
	for _, m := range mounts {
		if m.Type == mount.TypeVolume && m.Name != "" {
			vols = append(vols, m.Name)
		}
	}
	return vols
}

// leftoversOf removes what a lifetime test left (a failed one).
func leftoversOf(t *testing.T, purpose string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, _ := docker.List(ctx, dockerCli, runLabel+"="+runID, "pi-sandbox.test="+purpose)
	for _, s := range list {
		docker.Down(ctx, dockerCli, s.ID)
	}
}

// waitRemoved polls the engine until the container and its volumes are gone,
// failing t when they are still there within.
func waitRemoved(t *testing.T, id string, vols []string, within time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), within)
	defer cancel()
	for {
		left := ""
		if _, err := dockerCli.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
			left = "container"
		}
		for _, v := range vols {
			if left == "" {
				if _, err := dockerCli.VolumeInspect(ctx, v, client.VolumeInspectOptions{}); !cerrdefs.IsNotFound(err) {
					left = "volume " + v
				}
			}
		}
		if left == "" {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s of %.12s still there %s later", left, id, within)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// remaining is ls --json's remaining_seconds of id (nil without one).
func remaining(t *testing.T, id string) *float64 {
	t.Helper()
	out, errs, code := pi(t, "", "ls", "--json")
	var rows []struct {
		ID        string   `json:"id"`
		Remaining *float64 `json:"remaining_seconds"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rows) != nil {
		t.Fatalf("ls --json: code %d, out %q, err %s", code, out, errs)
	}
	for _, r := range rows {
		if r.ID == id {
			return r.Remaining
		}
	}
	t.Fatalf("ls --json does not list %.12s", id)
	return nil
}

// TestDockerUpTTL: up --ttl 5s ends by itself — container and volumes
// gone within 15 s, with no pi-sandbox process running (up has exited) —
// and ls shows the time left meanwhile.
func TestDockerUpTTL(t *testing.T) {
	t.Parallel()
	id, vols := upLifetime(t, "lifetime-ttl", "--ttl", "5s")
	if r := remaining(t, id); r == nil || *r > 5 {
		t.Errorf("ls remaining_seconds %v, want at most 5", r)
	}
	waitRemoved(t, id, vols, 15*time.Second)
}

// TestDockerUpIdleTimeout: a call that runs longer than the idle timeout
// is activity (the sandbox lives through it); once calls stop, the
// sandbox ends itself.
func TestDockerUpIdleTimeout(t *testing.T) {
	t.Parallel()
	id, vols := upLifetime(t, "lifetime-idle", "--idle-timeout", "5s")
	if text, isErr := bashIn(t, id, "sleep 7; echo survived"); isErr || !strings.Contains(text, "survived") {
		t.Fatalf("a 7 s call under a 5 s idle timeout: %q (isError %v)", text, isErr)
	}
	if r := remaining(t, id); r == nil || *r > 5 {
		t.Errorf("ls remaining_seconds %v, want at most 5", r)
	}
	waitRemoved(t, id, vols, 15*time.Second)
}

// TestDockerPoolTTLStartsAtClaim: a pool member's time to live starts at
// its claim (the fill and the wait before the claim do not count), and the
// claimed member then ends by itself.
func TestDockerPoolTTLStartsAtClaim(t *testing.T) {
	t.Parallel()
	name, flags := newPool(t, "lifetime-pool")
	filled := poolFill(t, name, 1, append(flags, "--ttl", "4s")...)
	if len(filled) != 1 {
		t.Fatalf("fill printed %q", filled)
	}
	if r := remaining(t, filled[0]); r != nil {
		t.Errorf("an idle member without --max-idle has remaining_seconds %v, want null", *r)
	}
	id, code, errs := claim(t, name)
	if code != 0 || id != filled[0] {
		t.Fatalf("claim: code %d, id %q, err %s", code, id, errs)
	}
	if text, isErr := bashIn(t, id, "echo alive"); isErr || !strings.Contains(text, "alive") {
		t.Fatalf("claimed member: %q (isError %v)", text, isErr)
	}
	res, err := dockerCli.ContainerInspect(t.Context(), id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vols := volumesOf(res.Container.Mounts)
	waitRemoved(t, id, vols, 15*time.Second)
}

// TestDockerToolImageKilled: a SIGKILLed `tool --image` leaks no running
// container: the helper sees its client gone and ends the container, and
// the engine removes it.
func TestDockerToolImageKilled(t *testing.T) {
	t.Parallel()
	needImage(t, "pi-sandbox/busybox")
	if piBin == "" {
		skipOrFail(t, "no pi-sandbox binary: "+piBinErr.Error())
	}
	cmd := exec.Command(piBin, "tool", "--backend", "docker", "--image", "pi-sandbox/busybox", "bash", `{"command":"sleep 121; echo not reached"}`)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	pid := strconv.Itoa(cmd.Process.Pid)
	// Ready when the command runs in the container (the engine's top: no
	// exec).
	var id string
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for id == "" {
		list, err := docker.List(ctx, dockerCli, docker.LabelPID+"="+pid)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range list {
			top, err := dockerCli.ContainerTop(ctx, s.ID, client.ContainerTopOptions{})
			if err == nil && strings.Contains(strings.Join(flatten(top.Processes), " "), "sleep 121") {
				id = s.ID
			}
		}
		if id == "" {
			select {
			case <-ctx.Done():
				t.Fatal("the command never ran in a container of the CLI")
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	t.Cleanup(func() { docker.Down(context.Background(), dockerCli, id) })
	res, err := dockerCli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vols := volumesOf(res.Container.Mounts)
	cmd.Process.Kill()
	cmd.Wait()
	waitRemoved(t, id, vols, 15*time.Second)
}

func flatten(rows [][]string) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r...)
	}
	return out
}
