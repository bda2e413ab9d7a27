package k8s

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
// this machine New fails before a pod is created, with the error that
// names the binary; NoHelper waives it.
func TestNewRefusesUnusableHelperBinary(t *testing.T) {
	p := filepath.Join(t.TempDir(), "pi-sandbox-shim")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := New(context.Background(), Config{Image: "busybox", Kubeconfig: filepath.Join(t.TempDir(), "none"), ShimBinary: p})
	var be *shim.BinaryError
	if !errors.As(err, &be) || !strings.HasPrefix(err.Error(), "k8s: shim: no static helper binary pi-sandbox-shim") {
		t.Fatalf("New = %v, want the *shim.BinaryError", err)
	}
	sf, err := readShim(&Config{ShimBinary: p, NoHelper: true})
	if err != nil || sf.err == nil || sf.err.Error() != "no pi-sandbox-shim on this machine" {
		t.Fatalf("readShim with NoHelper = %+v, %v", sf, err)
	}
}
