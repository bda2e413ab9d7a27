package docker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops/shim"
)

// TestNewRefusesUnusableHelperBinary: without a usable helper binary on
// this machine New fails, before the engine is contacted, with the error
// that names the binary; NoHelper waives it.
func TestNewRefusesUnusableHelperBinary(t *testing.T) {
	p := filepath.Join(t.TempDir(), "pi-sandbox-shim")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	_, err := New(context.Background(), Config{Image: "pi-sandbox/busybox", ShimBinary: p})
	var be *shim.BinaryError
	if !errors.As(err, &be) || !strings.HasPrefix(err.Error(), "docker: shim: no static helper binary pi-sandbox-shim") || !strings.Contains(err.Error(), "not an ELF executable") {
		t.Fatalf("New = %v, want the *shim.BinaryError", err)
	}
	sf, err := readShim(&Config{ShimBinary: p, NoHelper: true})
	if err != nil || sf.err == nil || sf.err.Error() != "no pi-sandbox-shim on this machine" {
		t.Fatalf("readShim with NoHelper = %+v, %v", sf, err)
	}
}
