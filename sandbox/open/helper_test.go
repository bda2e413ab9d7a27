package open_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops/shim"
	"github.com/pi-sandbox/pi-sandbox/sandbox/open"
)

// TestOpenRefusesWithoutHelperBinary: a program that opens a docker, k8s or
// ssh sandbox through the Go API and has no usable static helper binary
// gets the same refusal as the CLI, before any engine, cluster or host is
// contacted: a *shim.BinaryError naming pi-sandbox-shim, the place looked
// at and why it did not qualify, the install line and the NoHelper way out.
// With NoHelper the open goes on (and fails later, on the unreachable
// target, with another error).
func TestOpenRefusesWithoutHelperBinary(t *testing.T) {
	bad := filepath.Join(t.TempDir(), shim.BinaryName)
	if err := os.WriteFile(bad, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(shim.BinaryEnv, bad)
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	for _, cfg := range []open.Config{
		{Backend: "docker", Docker: open.DockerConfig{Image: "pi-sandbox/busybox"}},
		{Backend: "k8s", K8s: open.K8sConfig{Image: "busybox", Kubeconfig: filepath.Join(t.TempDir(), "none")}},
		{Backend: "ssh", SSH: open.SSHConfig{Host: "127.0.0.1:1", KnownHosts: filepath.Join(t.TempDir(), "known_hosts")}},
	} {
		t.Run(cfg.Backend, func(t *testing.T) {
			sb, err := open.Open(context.Background(), cfg)
			if sb != nil {
				sb.Close()
			}
			var be *shim.BinaryError
			if !errors.As(err, &be) || !be.Static {
				t.Fatalf("Open = %v, want a *shim.BinaryError for a static binary", err)
			}
			msg := err.Error()
			for _, want := range []string{
				"no static helper binary " + shim.BinaryName,
				"$" + shim.BinaryEnv + "=" + bad + ": not an ELF executable",
				shim.InstallHint,
				"NoHelper",
			} {
				if !strings.Contains(msg, want) {
					t.Errorf("error lacks %q:\n%s", want, msg)
				}
			}
			cfg.NoHelper = true
			sb, err = open.Open(context.Background(), cfg)
			if sb != nil {
				sb.Close()
			}
			if err == nil || errors.As(err, &be) {
				t.Fatalf("Open with NoHelper = %v, want an error reaching the target, not the binary's", err)
			}
		})
	}
}
