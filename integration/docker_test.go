package integration

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/docker"
	"github.com/pi-sandbox/pi-sandbox/ops/opstest"
)

var testImages = []string{"pi-sandbox/busybox", "pi-sandbox/debian"}

// fallbackImage is the one image the fallback (no helper: one exec per
// operation, POSIX sh scripts) runs its conformance cases on, on every
// transport: busybox, whose ash and applets are the least the scripts may
// rely on (no GNU options), so what passes there passes on the richer
// images that the helper configurations cover.
const fallbackImage = "pi-sandbox/busybox"

func shortName(image string) string { return image[strings.LastIndex(image, "/")+1:] }

// TestDockerConformance runs the ops conformance suite in one long-lived
// hardened container per image; each case gets a fresh backend on it (its
// own sandbox directory), which is how `pi-sandbox --container` works.
// With the helper (one long-lived exec) the whole suite runs on every
// image; without it (one exec per operation, the fallback) the core cases
// run on fallbackImage.
func TestDockerConformance(t *testing.T) {
	for _, image := range testImages {
		t.Run(shortName(image), func(t *testing.T) {
			needImage(t, image)
			id := upContainer(t, image, "conformance")
			open := func(noHelper bool) func(t *testing.T) ops.Backend {
				return func(t *testing.T) ops.Backend {
					b := newBackend(t, docker.Config{Container: id, NoHelper: noHelper})
					if got := b.Info().Has("helper"); got == noHelper {
						t.Fatalf("helper capability %v, want %v (limits %v)", got, !noHelper, b.Info().Limits)
					}
					return b
				}
			}
			t.Run("helper", func(t *testing.T) { opstest.TestBackend(t, open(false)) })
			if image == fallbackImage {
				t.Run("nohelper", func(t *testing.T) { opstest.TestBackendCore(t, open(true), opstest.Gaps{}) })
			}
		})
	}
}

// upContainer starts a hardened container for the test and removes it in
// t.Cleanup, checking nothing of it remains.
func upContainer(t *testing.T, image, purpose string) string {
	t.Helper()
	return upContainerConfig(t, docker.Config{Image: image}, purpose)
}

// upContainerConfig is upContainer for a whole configuration (cfg.Labels
// are replaced by the run's).
func upContainerConfig(t *testing.T, cfg docker.Config, purpose string) string {
	t.Helper()
	l := labels()
	l["pi-sandbox.test"] = purpose
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg.Labels = l
	id, err := docker.Up(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := docker.Down(ctx, dockerCli, id); err != nil {
			t.Error(err)
		}
		checkNoContainers(t, "pi-sandbox.test="+purpose)
	})
	return id
}

// newBackend opens a backend with this run's label and closes it in
// t.Cleanup.
func newBackend(t *testing.T, cfg docker.Config) *docker.Backend {
	t.Helper()
	if cfg.Labels == nil {
		cfg.Labels = labels()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := docker.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := b.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	})
	return b
}

// TestDockerEphemeral: an --image backend gets the hardened profile, and
// Close removes the container and its volumes.
func TestDockerEphemeral(t *testing.T) {
	for _, image := range testImages {
		t.Run(shortName(image), func(t *testing.T) {
			cli := needImage(t, image)
			ctx := t.Context()
			l := labels()
			l["pi-sandbox.test"] = "ephemeral-" + shortName(image)
			b, err := docker.New(ctx, docker.Config{Image: image, Labels: l})
			if err != nil {
				t.Fatal(err)
			}
			closed := false
			t.Cleanup(func() {
				if !closed {
					b.Close()
				}
			})
			info := b.Info()
			if info.WorkDir != "/workspace" || info.UID != 1000 || info.GID != 1000 || info.OS != "linux" || info.Arch == "" {
				t.Errorf("Info = %+v", info)
			}
			if image == "pi-sandbox/debian" && info.Shell != "/bin/bash" {
				t.Errorf("Shell = %q, want /bin/bash", info.Shell)
			}
			if !strings.HasPrefix(info.SpillDir, docker.DefaultStateDir+"/") {
				t.Errorf("SpillDir = %q, want under the state volume %s", info.SpillDir, docker.DefaultStateDir)
			}
			if !info.Has("shim") || len(info.Limits) != 1 || !strings.Contains(info.Limits[0], "the ephemeral container's: full outputs go with it") {
				t.Errorf("Capabilities %v, Limits %q: want the shim and only the ephemeral spill note", info.Capabilities, info.Limits)
			}
			// The spill directory is disk-backed (a volume), not a tmpfs.
			var fsType bytes.Buffer
			if err := b.Run(ctx, &ops.Cmd{Command: "stat -f -c %T " + info.SpillDir, Output: &fsType}); err != nil || strings.Contains(fsType.String(), "tmpfs") {
				t.Errorf("spill directory file system %q, %v", fsType.String(), err)
			}
			ins, err := cli.ContainerInspect(ctx, b.ID(), client.ContainerInspectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			hc := ins.Container.HostConfig
			if !hc.ReadonlyRootfs || hc.NetworkMode != "none" || hc.Init == nil || !*hc.Init ||
				len(hc.CapDrop) != 1 || hc.CapDrop[0] != "ALL" || hc.PidsLimit == nil || *hc.PidsLimit != docker.DefaultPidsLimit ||
				hc.Memory != docker.DefaultMemory || ins.Container.Config.User != "1000:1000" {
				t.Errorf("not the hardened profile: %+v", hc)
			}
			// The root is read-only, /tmp is an exec-enabled tmpfs, the
			// workspace and the spill directory are writable.
			var out bytes.Buffer
			err = b.Run(ctx, &ops.Cmd{Command: `touch /rootfs-probe 2>/dev/null && echo root-writable
printf '#!/bin/sh\necho tmp-exec\n' > /tmp/x.sh && chmod +x /tmp/x.sh && /tmp/x.sh
touch /workspace/w "$SPILL/s" && echo writable
id -u; cat /proc/self/status | grep -i '^CapEff'`, Env: []string{"SPILL=" + info.SpillDir}, Output: &out})
			if err != nil {
				t.Fatalf("Run: %v\n%s", err, out.String())
			}
			want := "tmp-exec\nwritable\n1000\nCapEff:\t0000000000000000\n"
			if out.String() != want {
				t.Errorf("profile probe output %q, want %q", out.String(), want)
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			closed = true
			if _, err := cli.ContainerInspect(ctx, b.ID(), client.ContainerInspectOptions{}); err == nil {
				t.Errorf("container %s still exists after Close", b.ID())
			}
			vols, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: client.Filters{}.Add("label", runLabel+"="+runID, "pi-sandbox.test="+l["pi-sandbox.test"])})
			if err != nil {
				t.Fatal(err)
			}
			if len(vols.Items) != 0 {
				t.Errorf("%d volumes left after Close", len(vols.Items))
			}
		})
	}
}

// TestDockerSmoke is a quick end-to-end check of the file and command paths
// on the busybox image (the conformance suite covers them in depth).
func TestDockerSmoke(t *testing.T) {
	needImage(t, "pi-sandbox/busybox")
	b := newBackend(t, docker.Config{Image: "pi-sandbox/busybox"})
	ctx := t.Context()
	if err := b.WriteFile(ctx, "/workspace/a.txt", []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data, err := ops.ReadFile(ctx, b, "/workspace/a.txt")
	if err != nil || string(data) != "hello\n" {
		t.Fatalf("read back %q, %v", data, err)
	}
	_, err = b.Stat(ctx, "/workspace/nope")
	if !errors.Is(err, fs.ErrNotExist) || ops.ErrnoOf(err) != ops.ENOENT {
		t.Fatalf("Stat missing = %v", err)
	}
	var out bytes.Buffer
	if err := b.Run(ctx, &ops.Cmd{Command: "echo hi; echo err >&2", Output: &out}); err != nil || out.String() != "hi\nerr\n" {
		t.Fatalf("Run = %v, %q", err, out.String())
	}
}
