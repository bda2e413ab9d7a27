package integration

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

// mountedHelperDir is where a container pi-sandbox creates on an engine of
// this host has the helper binaries (docs/backends.md).
const mountedHelperDir = "/opt/pi-sandbox-helper"

// TestDockerHelperMounted: a container pi-sandbox creates (--image, up) on
// this host's engine runs the helper from the read-only bind mount of the
// host's helper cache — no upload into /tmp — and the sandbox user can
// neither read nor replace the binary.
func TestDockerHelperMounted(t *testing.T) {
	cli := needImage(t, "pi-sandbox/busybox")
	check := func(t *testing.T, b *docker.Backend) {
		t.Helper()
		if !b.Info().Has("helper") {
			t.Fatalf("no helper: %v", b.Info().Limits)
		}
		res, err := cli.ContainerInspect(t.Context(), b.ID(), client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mounted := false
		for _, m := range res.Container.Mounts {
			mounted = mounted || (m.Destination == mountedHelperDir && !m.RW)
		}
		if !mounted {
			t.Fatalf("no read-only mount at %s: %+v", mountedHelperDir, res.Container.Mounts)
		}
		var out bytes.Buffer
		script := `ls /tmp | grep -c '^pi-sandbox-bin' ; for f in ` + mountedHelperDir + `/pi-sandbox-shim-*; do
  head -c1 "$f" >/dev/null 2>&1 && echo readable; (echo x > "$f") 2>/dev/null && echo writable; done; echo done`
		if err := b.Run(t.Context(), &ops.Cmd{Command: script, Output: &out}); err != nil {
			t.Fatal(err)
		}
		if got := out.String(); got != "0\ndone\n" {
			t.Errorf("uploads in /tmp, then the mounted binaries' access: %q, want none uploaded, none readable or writable", got)
		}
		if n := countInContainer(t, b.ID(), "[/]opt/pi-sandbox-helper/pi-sandbox-shim-.* __shim"); n == "0" {
			t.Errorf("no helper runs from %s", mountedHelperDir)
		}
	}
	t.Run("image", func(t *testing.T) {
		check(t, newBackend(t, docker.Config{Image: "pi-sandbox/busybox"}))
	})
	t.Run("up", func(t *testing.T) {
		id := upContainer(t, "pi-sandbox/busybox", "helper-mounted-up")
		check(t, newBackend(t, docker.Config{Container: id}))
	})
}

// foreignHelper writes a static ELF executable for arm64 (a header is all
// the lookup reads) as the only helper binary in a directory of its own:
// an amd64 container has no binary then.
func foreignHelper(t *testing.T) string {
	t.Helper()
	var buf bytes.Buffer
	h := elf.Header64{Type: uint16(elf.ET_EXEC), Machine: uint16(elf.EM_AARCH64), Version: uint32(elf.EV_CURRENT), Ehsize: 64, Phentsize: 56}
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS], h.Ident[elf.EI_DATA], h.Ident[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	binary.Write(&buf, binary.LittleEndian, h)
	p := filepath.Join(t.TempDir(), "pi-sandbox-shim")
	if err := os.WriteFile(p, buf.Bytes(), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDockerHelperNoBinaryForArch: with no helper binary for the image's
// architecture, a container pi-sandbox would create is refused before it
// is created, with an error naming the architecture and how to build the
// binary, and an up sandbox is refused too; NoHelper asks for the fallback
// and gets it, and an existing container of someone else's runs on the
// fallback with Info.Limits saying why.
func TestDockerHelperNoBinaryForArch(t *testing.T) {
	needImage(t, "pi-sandbox/busybox")
	bin := foreignHelper(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	l := labels()
	l["pi-sandbox.test"] = "helper-no-arch"
	_, err := docker.New(ctx, docker.Config{Image: "pi-sandbox/busybox", ShimBinary: bin, Labels: l})
	for _, want := range []string{"linux/amd64", "no static helper binary pi-sandbox-shim for linux/amd64", "pi-sandbox-shim-linux-amd64"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New(Image) = %v, want an error naming %q", err, want)
		}
	}
	checkNoContainers(t, "pi-sandbox.test=helper-no-arch")

	fb := newBackend(t, docker.Config{Image: "pi-sandbox/busybox", ShimBinary: bin, NoHelper: true})
	if fb.Info().Has("helper") || !strings.Contains(strings.Join(fb.Info().Limits, "; "), "no pi-sandbox-shim for linux/amd64 on this machine") {
		t.Errorf("NoHelper: helper %v, limits %v", fb.Info().Has("helper"), fb.Info().Limits)
	}

	id := upContainer(t, "pi-sandbox/busybox", "helper-no-arch-up")
	if b, err := docker.New(ctx, docker.Config{Container: id, ShimBinary: bin}); err == nil {
		b.Close()
		t.Errorf("an up sandbox without a binary for its architecture opened")
	} else if !strings.Contains(err.Error(), "which pi-sandbox created") || !strings.Contains(err.Error(), "linux/amd64") {
		t.Errorf("up sandbox: %v", err)
	}

	plain := plainContainer(t, "helper-no-arch-plain")
	pb := newBackend(t, docker.Config{Container: plain, ShimBinary: bin})
	limits := strings.Join(pb.Info().Limits, "; ")
	if pb.Info().Has("helper") || !strings.Contains(limits, "no helper") || !strings.Contains(limits, "no pi-sandbox-shim for linux/amd64 on this machine") {
		t.Errorf("existing container: helper %v, limits %v", pb.Info().Has("helper"), limits)
	}
	var out bytes.Buffer
	if err := pb.Run(t.Context(), &ops.Cmd{Command: "echo fallback", Output: &out}); err != nil || out.String() != "fallback\n" {
		t.Errorf("the fallback runs: %q, %v", out.String(), err)
	}
}
