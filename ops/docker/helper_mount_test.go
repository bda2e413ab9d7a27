package docker

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"

	"github.com/pi-sandbox/pi-sandbox/ops/shim"
)

// TestEngineOnThisHost: the helper is bind-mounted only when the client
// reaches the engine over a unix socket and the engine names this host.
func TestEngineOnThisHost(t *testing.T) {
	for _, tc := range []struct {
		daemon, engine, host string
		want                 bool
	}{
		{"unix:///var/run/docker.sock", "vm", "vm", true},
		{"unix:///run/user/1000/podman/podman.sock", "Build-1", "build-1", true},
		{"", "vm", "vm", true},
		// A socket forwarded from a VM, or a host's socket in a container.
		{"unix:///Users/me/.docker/run/docker.sock", "docker-desktop", "mac", false},
		{"unix:///var/run/docker.sock", "host", "devcontainer-1a2b", false},
		{"unix:///var/run/docker.sock", "", "vm", false},
		{"tcp://vm:2375", "vm", "vm", false},
		{"ssh://me@vm", "vm", "vm", false},
		{"npipe:////./pipe/docker_engine", "vm", "vm", false},
	} {
		if got := engineOnThisHost(tc.daemon, tc.engine, tc.host); got != tc.want {
			t.Errorf("engineOnThisHost(%q, %q, %q) = %v, want %v", tc.daemon, tc.engine, tc.host, got, tc.want)
		}
	}
}

// staticELF writes a static ELF executable header for machine m at p.
func staticELF(t *testing.T, p string, m elf.Machine) {
	t.Helper()
	var buf bytes.Buffer
	h := elf.Header64{Type: uint16(elf.ET_EXEC), Machine: uint16(m), Version: uint32(elf.EV_CURRENT), Ehsize: 64, Phentsize: 56}
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS], h.Ident[elf.EI_DATA], h.Ident[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	binary.Write(&buf, binary.LittleEndian, h)
	if err := os.WriteFile(p, buf.Bytes(), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestChooseHelper: a container we create gets the binary of its image's
// architecture, bind-mounted read-only where the engine is on this host
// and uploaded elsewhere (and under gVisor); an image of an architecture
// without a binary is refused before anything is created, unless NoHelper
// asks for the fallback.
func TestChooseHelper(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	dir := t.TempDir()
	base := filepath.Join(dir, shim.BinaryName)
	staticELF(t, base, elf.EM_X86_64)
	arm := filepath.Join(dir, shim.ArchBinaryName("arm64"))
	staticELF(t, arm, elf.EM_AARCH64)
	host, _ := os.Hostname()
	const sock = "unix:///var/run/docker.sock"

	cfg := &Config{Image: "img", ShimBinary: base}
	hs, m, err := chooseHelper(cfg, "arm64", sock, host)
	if err != nil || hs.arch != "arm64" || !hs.mounted || cfg.shim.host != arm {
		t.Fatalf("arm64 image, local engine: %+v, %v, %v (binary %q)", hs, m, err, cfg.shim.host)
	}
	if m == nil || m.Type != mount.TypeBind || !m.ReadOnly || m.Target != helperDir {
		t.Fatalf("mount = %+v", m)
	}
	fi, err := os.Stat(filepath.Join(m.Source, cfg.shim.name))
	if err != nil || fi.Mode().Perm() != 0o111 || fi.Size() != cfg.shim.up.Size {
		t.Fatalf("cached binary: %v, %v", fi, err)
	}

	cfg = &Config{Image: "img", ShimBinary: base}
	hs, m, err = chooseHelper(cfg, "amd64", "tcp://engine:2375", host)
	if err != nil || hs.mounted || m != nil || cfg.shim.host != base || !strings.Contains(hs.why, "not on this host") {
		t.Errorf("remote engine: %+v, %v, %v", hs, m, err)
	}
	cfg = &Config{Image: "img", ShimBinary: base, Runtime: "runsc"}
	if hs, m, err = chooseHelper(cfg, "", sock, host); err != nil || m != nil || hs.arch != runtime.GOARCH || !strings.Contains(hs.why, "gVisor") {
		t.Errorf("runsc: %+v, %v, %v", hs, m, err)
	}

	os.Remove(arm)
	cfg = &Config{Image: "img", ShimBinary: base}
	_, m, err = chooseHelper(cfg, "arm64", sock, host)
	var be *shim.BinaryError
	if !errors.As(err, &be) || m != nil || !strings.HasPrefix(err.Error(), "docker: image img is linux/arm64: shim: no static helper binary pi-sandbox-shim for linux/arm64") {
		t.Errorf("arm64 image without an arm64 binary: %v", err)
	}
	cfg = &Config{Image: "img", ShimBinary: base, NoHelper: true}
	if hs, m, err = chooseHelper(cfg, "arm64", sock, host); err != nil || m != nil || cfg.shim.err == nil {
		t.Errorf("the same with NoHelper: %+v, %v, %v", hs, m, err)
	}
}

// TestHelperCache: the cache holds each binary once, execute-only, under
// its content address; a binary unused for a week goes when another is
// added.
func TestHelperCache(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	src := filepath.Join(t.TempDir(), "bin")
	staticELF(t, src, elf.EM_X86_64)
	u, err := shim.ReadUpload(src)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := helperCache(u)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, u.Name())
	old := filepath.Join(dir, "pi-sandbox-shim-0123456789abcdef")
	os.WriteFile(old, []byte("old"), 0o111)
	weekAgo := time.Now().Add(-8 * 24 * time.Hour)
	os.Chtimes(old, weekAgo, weekAgo)
	os.Chtimes(p, weekAgo, weekAgo)
	if d, err := helperCache(u); d != dir || err != nil {
		t.Fatalf("again: %q, %v", d, err)
	}
	if fi, err := os.Stat(p); err != nil || time.Since(fi.ModTime()) > time.Hour {
		t.Errorf("a binary in use keeps a fresh time: %v, %v", fi, err)
	}
	if _, err := os.Stat(old); err != nil {
		t.Errorf("nothing is pruned when nothing is added: %v", err)
	}
	staticELF(t, src, elf.EM_AARCH64)
	u2, err := shim.ReadUpload(src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := helperCache(u2); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a binary unused for a week stays: %v", err)
	}
	for _, n := range []string{u.Name(), u2.Name()} {
		if fi, err := os.Stat(filepath.Join(dir, n)); err != nil || fi.Mode().Perm() != 0o111 {
			t.Errorf("%s: %v, %v", n, fi, err)
		}
	}
}

// TestMountedHelper: only a read-only bind mount at helperDir is taken for
// the helper's.
func TestMountedHelper(t *testing.T) {
	ro := container.MountPoint{Type: mount.TypeBind, Destination: helperDir}
	rw, vol := ro, ro
	rw.RW = true
	vol.Type = mount.TypeVolume
	ro.Source = "/cache/helper"
	rw.Source, vol.Source = ro.Source, ro.Source
	if got := mountedHelper([]container.MountPoint{{Destination: "/workspace", Source: "/w"}, ro}); got != ro.Source {
		t.Errorf("the read-only bind mount is not taken: %q", got)
	}
	for _, m := range []container.MountPoint{rw, vol} {
		if got := mountedHelper([]container.MountPoint{m}); got != "" {
			t.Errorf("%+v is taken: %q", m, got)
		}
	}
	m := &mount.Mount{Source: "/home/me/.cache/pi-sandbox/helper"}
	if !mountRefused(errors.New(`invalid mount config for type "bind": bind source path does not exist: /home/me/.cache/pi-sandbox/helper`), m) {
		t.Error("a refused mount is not seen")
	}
	if mountRefused(errors.New("no such image"), m) || mountRefused(nil, m) {
		t.Error("another failure is taken for a refused mount")
	}
}
