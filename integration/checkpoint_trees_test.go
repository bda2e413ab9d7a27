package integration

import (
	"io/fs"
	"math/rand"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops/checkpoint/treetest"
	"github.com/pi-sandbox/pi-sandbox/ops/k8s"
	"github.com/pi-sandbox/pi-sandbox/ops/ssh/sshtest"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
	"github.com/pi-sandbox/pi-sandbox/sandbox/open"
)

// checkCheckpointTrees: on sb, whose working directory is hostDir on this
// host (a bind mount, a hostPath, or the ssh user's directory), owned by
// uid:gid, restore(checkpoint(A)) over B gives A bit for bit for n random
// pairs of trees (read-only directories and files included: a target user
// without root's overrides must work around its own modes).
func checkCheckpointTrees(t *testing.T, sb *sandbox.Sandbox, hostDir string, uid, gid, n int) {
	t.Helper()
	ctx := t.Context()
	r := rand.New(rand.NewSource(11))
	put := func(tree []treetest.Node) {
		treetest.Clear(t, hostDir)
		treetest.Materialize(t, hostDir, tree)
		filepath.WalkDir(hostDir, func(p string, d fs.DirEntry, err error) error {
			if err == nil {
				os.Lchown(p, uid, gid)
			}
			return nil
		})
	}
	for i := 0; i < n; i++ {
		a, b := treetest.Rand(r), treetest.Rand(r)
		put(a)
		want := treetest.Snapshot(t, hostDir)
		c, _, err := sb.Checkpoint(ctx, sandbox.CheckpointOptions{})
		if err != nil {
			t.Fatalf("tree %d: checkpoint: %v", i, err)
		}
		put(b)
		if _, _, err := sb.Restore(ctx, c.ID); err != nil {
			t.Fatalf("tree %d: restore: %v", i, err)
		}
		if got := treetest.Snapshot(t, hostDir); got != want {
			t.Fatalf("tree %d: restored\n%s\nwant\n%s", i, got, want)
		}
	}
}

// TestSSHCheckpointTrees: the tree property through the ssh backend's
// helper, as the (non-root) login user.
func TestSSHCheckpointTrees(t *testing.T) {
	s := sshtest.Start(t)
	dir := s.TempDir(t)
	u, err := user.Lookup(s.User)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	sb, err := open.Open(t.Context(), open.Config{Backend: "ssh", WorkDir: dir,
		SSH: open.SSHConfig{Host: s.User + "@" + s.Addr(), Identity: s.IdentityFile, KnownHosts: s.KnownHostsFile}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	checkCheckpointTrees(t, sb, dir, uid, gid, 30)
}

// dockerTreesSandbox is an up sandbox on runtime ("" the engine's) whose
// /workspace is a bind mount of a host directory, as 1000:1000.
func dockerTreesSandbox(t *testing.T, runtime, purpose string) (*sandbox.Sandbox, string) {
	needImage(t, "pi-sandbox/busybox")
	host := t.TempDir()
	os.Chown(host, 1000, 1000)
	t.Cleanup(func() { checkNoContainers(t, "pi-sandbox.test="+purpose) })
	args := []string{"up", "--image", "pi-sandbox/busybox", "--mount", host + ":/workspace", "--user", "1000:1000",
		"--label", runLabel + "=" + runID, "--label", "pi-sandbox.test=" + purpose}
	if runtime != "" {
		args = append(args, "--runtime", runtime)
	}
	out, errs, code := pi(t, "", args...)
	id := strings.TrimSpace(out)
	if code != 0 || len(id) != 64 {
		t.Fatalf("up: code %d, out %q, err %s", code, out, errs)
	}
	t.Cleanup(func() { pi(t, "", "down", id) })
	sb, err := open.Open(t.Context(), open.Config{Backend: "docker", Docker: open.DockerConfig{Container: id}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb, host
}

// TestDockerCheckpointTrees: the tree property in a docker up sandbox
// (runc), as 1000:1000 without capabilities.
func TestDockerCheckpointTrees(t *testing.T) {
	sb, host := dockerTreesSandbox(t, "", "checkpoint-trees")
	checkCheckpointTrees(t, sb, host, 1000, 1000, 30)
}

// TestRunscCheckpointTrees: the same under gVisor (a smaller set).
func TestRunscCheckpointTrees(t *testing.T) {
	needRuntime(t, "pi-sandbox/busybox", "runsc")
	sb, host := dockerTreesSandbox(t, "runsc", "checkpoint-trees-runsc")
	checkCheckpointTrees(t, sb, host, 1000, 1000, 10)
}

// TestK8sCheckpointTrees: the same in an up pod whose /workspace is a
// hostPath of this host (the node), as 1000:1000.
func TestK8sCheckpointTrees(t *testing.T) {
	needCluster(t)
	host := t.TempDir()
	os.Chown(host, 1000, 1000)
	pod := longPod(t, k8s.Config{Image: k8sBusybox, User: "1000:1000", Mounts: []k8s.Mount{{Source: host, Target: "/workspace"}}}, "checkpoint-trees")
	sb, err := sandbox.OpenBackend(t.Context(), newK8s(t, k8s.Config{Pod: pod}, "checkpoint-trees"), sandbox.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	checkCheckpointTrees(t, sb, host, 1000, 1000, 10)
}
