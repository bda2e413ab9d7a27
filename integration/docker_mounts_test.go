package integration

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/docker"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
)

// ownedDir returns a new directory (mode 0755) owned by uid:gid, with a
// file f.txt ("a\n") of the same owner.
func ownedDir(t *testing.T, uid, gid int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(t, "needs root to give a directory to another uid")
	}
	d := t.TempDir()
	os.Chmod(d, 0o755)
	if err := os.WriteFile(filepath.Join(d, "f.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{d, filepath.Join(d, "f.txt")} {
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// hostOwner returns the uid and gid of a host path.
func hostOwner(t *testing.T, p string) (uint32, uint32) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return st.Uid, st.Gid
}

// mountSandbox opens an ephemeral debian sandbox with dir on /workspace,
// collecting the backend's notes.
func mountSandbox(t *testing.T, dir, user string) (*sandbox.Sandbox, ops.Info, *[]string) {
	t.Helper()
	var notes []string
	b := newBackend(t, docker.Config{Image: "pi-sandbox/debian", User: user, Labels: labels(),
		Mounts: []docker.Mount{{Source: dir, Target: "/workspace"}}, Note: func(s string) { notes = append(notes, s) }})
	sb, err := sandbox.OpenBackend(context.Background(), b, sandbox.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return sb, b.Info(), &notes
}

func call(t *testing.T, sb *sandbox.Sandbox, name string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := sb.Call(ctx, name, args)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return resultText(res), res.IsError
}

// TestDockerMountOwnerUser: with a mount owned by 1001:1001 and no user
// given, the sandbox runs as 1001:1001: write, edit and git (with a HOME
// it can write, though the image has no such user) work, and what they
// make belongs to 1001 on the host.
func TestDockerMountOwnerUser(t *testing.T) {
	needImage(t, "pi-sandbox/debian")
	dir := ownedDir(t, 1001, 1001)
	sb, info, notes := mountSandbox(t, dir, "")
	if info.UID != 1001 || info.GID != 1001 || len(*notes) != 0 {
		t.Fatalf("runs as %d:%d, notes %q; want 1001:1001 and none", info.UID, info.GID, *notes)
	}
	if !strings.HasPrefix(info.Home, docker.DefaultStateDir+"/") {
		t.Errorf("HOME %q is not in the state volume", info.Home)
	}
	if text, isErr := call(t, sb, "write", map[string]any{"path": "new.txt", "content": "x\n"}); isErr {
		t.Fatalf("write: %s", text)
	}
	if text, isErr := call(t, sb, "edit", map[string]any{"path": "f.txt", "oldText": "a", "newText": "b"}); isErr {
		t.Fatalf("edit: %s", text)
	}
	text, isErr := call(t, sb, "bash", map[string]any{"command": `git init -q . && git config --global user.email t@x && git config --global user.name t && git add -A && git commit -qm one && echo "home=$HOME" && git log --format=%s`})
	if isErr || !strings.Contains(text, "home="+info.Home+"\none") {
		t.Fatalf("git: %s", text)
	}
	for _, p := range []string{"new.txt", "f.txt", ".git", ".git/HEAD"} {
		if uid, gid := hostOwner(t, filepath.Join(dir, p)); uid != 1001 || gid != 1001 {
			t.Errorf("%s belongs to %d:%d on the host, want 1001:1001", p, uid, gid)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "f.txt")); string(b) != "b\n" {
		t.Errorf("f.txt = %q after the edit", b)
	}
}

// TestDockerMountRootOwned: a root-owned mount keeps 1000:1000 with a note
// saying what to do; a write fails with pi's text on its first line and
// the advice on the second; an explicit --user 0:0 writes.
func TestDockerMountRootOwned(t *testing.T) {
	needImage(t, "pi-sandbox/debian")
	dir := ownedDir(t, 0, 0)
	sb, info, notes := mountSandbox(t, dir, "")
	if info.UID != 1000 || info.GID != 1000 {
		t.Fatalf("runs as %d:%d, want 1000:1000", info.UID, info.GID)
	}
	if len(*notes) != 1 || !strings.Contains((*notes)[0], dir+" belongs to root") || !strings.Contains((*notes)[0], "chown -R 1000:1000 "+dir) || !strings.Contains((*notes)[0], "--user 0:0") {
		t.Fatalf("notes %q", *notes)
	}
	text, isErr := call(t, sb, "write", map[string]any{"path": "new.txt", "content": "x\n"})
	first, hint, _ := strings.Cut(text, "\n")
	if !isErr || first != "EACCES: permission denied, open '/workspace/new.txt'" {
		t.Fatalf("write: error %v, %q", isErr, text)
	}
	for _, want := range []string{"runs as 1000:1000 (user)", "/workspace belongs to 0:0", "--user 0:0"} {
		if !strings.Contains(hint, want) {
			t.Errorf("advice %q lacks %q", hint, want)
		}
	}
	text, _ = call(t, sb, "edit", map[string]any{"path": "f.txt", "oldText": "a", "newText": "b"})
	if first, hint, _ := strings.Cut(text, "\n"); first != "Could not edit file: f.txt. Error code: EACCES." || !strings.Contains(hint, "/workspace/f.txt belongs to 0:0") {
		t.Fatalf("edit: %q", text)
	}

	sb, info, _ = mountSandbox(t, dir, "0:0")
	if info.UID != 0 {
		t.Fatalf("--user 0:0 runs as %d", info.UID)
	}
	if text, isErr := call(t, sb, "write", map[string]any{"path": "root.txt", "content": "x\n"}); isErr {
		t.Fatalf("write as root: %s", text)
	}
	if uid, _ := hostOwner(t, filepath.Join(dir, "root.txt")); uid != 0 {
		t.Errorf("root.txt belongs to uid %d", uid)
	}
}

// TestDockerCLIMountNote: the CLI prints the root-owned mount's note on
// stderr, and the tool's result carries the advice.
func TestDockerCLIMountNote(t *testing.T) {
	needImage(t, "pi-sandbox/debian")
	dir := ownedDir(t, 0, 0)
	out, errs, code := pi(t, "", "tool", "--backend", "docker", "--image", "pi-sandbox/debian", "--mount", dir+":/workspace", "write", `{"path":"n.txt","content":"x"}`)
	if code != 0 || !strings.Contains(out, `"isError":true`) || !strings.Contains(out, `EACCES: permission denied, open '/workspace/n.txt'\n[pi-sandbox: the sandbox runs as 1000:1000`) {
		t.Fatalf("code %d, out %s, err %s", code, out, errs)
	}
	if !strings.Contains(errs, "pi-sandbox tool: note: the mount source "+dir+" belongs to root") {
		t.Fatalf("stderr %q has no note", errs)
	}
}

// TestDockerConfigRefusals: what the engine refuses of a configuration is
// ops.ErrConfig with the reason and the fix, never a transport failure;
// the CLI exits 2 for it and checks --user and --mount before anything is
// created.
func TestDockerConfigRefusals(t *testing.T) {
	cli := needImage(t, "pi-sandbox/busybox")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	refused := func(what string, err error, want string) {
		t.Helper()
		if !errors.Is(err, ops.ErrConfig) || errors.Is(err, ops.ErrTransport) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want ops.ErrConfig saying %q", what, err, want)
		}
	}
	_, err := docker.New(ctx, docker.Config{Image: "pi-sandbox-test/absent:never", Labels: labels()})
	refused("a foreign image", err, "run `docker pull pi-sandbox-test/absent:never`")
	_, err = docker.New(ctx, docker.Config{Image: "pi-sandbox/absent", Labels: labels()})
	refused("our image", err, "run `pi-sandbox image build`")
	_, err = docker.New(ctx, docker.Config{Image: "pi-sandbox/busybox", User: "nosuchuser", Labels: labels()})
	refused("an unknown user", err, "nosuchuser")

	id := upContainer(t, "pi-sandbox/busybox", "refusals")
	for _, noHelper := range []bool{false, true} {
		_, err = docker.New(ctx, docker.Config{Container: id, User: "nosuchuser", NoHelper: noHelper})
		refused("an unknown user in an existing container", err, "unable to find user nosuchuser")
	}
	if _, err := cli.ContainerPause(ctx, id, client.ContainerPauseOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = docker.New(ctx, docker.Config{Container: id})
	refused("a paused container", err, "docker unpause "+id)
	if _, err := cli.ContainerUnpause(ctx, id, client.ContainerUnpauseOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.ContainerStop(ctx, id, client.ContainerStopOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = docker.New(ctx, docker.Config{Container: id})
	refused("a stopped container", err, "docker start "+id)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--image", "pi-sandbox-test/absent:never"}, "docker pull pi-sandbox-test/absent:never"},
		{[]string{"--image", "pi-sandbox/busybox", "--user", "nosuchuser"}, "nosuchuser"},
		{[]string{"--image", "pi-sandbox/busybox", "--user", "a b"}, "want UID[:GID] or NAME[:GROUP]"},
		{[]string{"--image", "pi-sandbox/busybox", "--mount", "/nonexistent-pi-sandbox:/workspace"}, "/nonexistent-pi-sandbox"},
	} {
		args := append(append([]string{"tool", "--backend", "docker"}, tc.args...), "bash", `{"command":"true"}`)
		out, errs, code := pi(t, "", args...)
		if code != 2 || out != "" || !strings.Contains(errs, tc.want) || strings.Contains(errs, "transport") {
			t.Errorf("%q: code %d, out %q, err %q; want 2 and %q", tc.args, code, out, errs, tc.want)
		}
	}
}
