package sshops

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
// this machine New fails before it dials, with the error that names the
// binary; NoHelper waives it (and then dials).
func TestNewRefusesUnusableHelperBinary(t *testing.T) {
	p := filepath.Join(t.TempDir(), "pi-sandbox-shim")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Host: "127.0.0.1", Port: 1, ShimBinary: p, KnownHostsFile: filepath.Join(t.TempDir(), "known_hosts")}
	_, err := New(context.Background(), cfg)
	var be *shim.BinaryError
	if !errors.As(err, &be) || !strings.HasPrefix(err.Error(), "sshops: shim: no static helper binary pi-sandbox-shim") {
		t.Fatalf("New = %v, want the *shim.BinaryError", err)
	}
	cfg.NoHelper = true
	if _, err := New(context.Background(), cfg); err == nil || errors.As(err, &be) {
		t.Fatalf("New with NoHelper = %v, want a dial error", err)
	}
}
