package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The in-target binary holds only what runs in a target: no engine, ssh,
// MCP, Kubernetes or model SDKs.
func TestNoClientDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	banned := []string{"github.com/moby/", "github.com/docker/", "golang.org/x/crypto/ssh", "github.com/pkg/sftp",
		"github.com/modelcontextprotocol/", "k8s.io/", "github.com/anthropics/", "github.com/openai/",
		"github.com/pi-sandbox/pi-sandbox/sandbox", "github.com/pi-sandbox/pi-sandbox/tools", "github.com/pi-sandbox/pi-sandbox/loop"}
	for _, p := range strings.Fields(string(out)) {
		for _, b := range banned {
			if strings.HasPrefix(p, b) {
				t.Errorf("pi-sandbox-shim depends on %s", p)
			}
		}
	}
}

// TestSize: the binary uploaded into every target stays at most 10 MB,
// built as the Makefile builds it.
func TestSize(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "pi-sandbox-shim")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 10_000_000 {
		t.Errorf("pi-sandbox-shim is %d bytes, over 10 MB", fi.Size())
	}
	t.Logf("pi-sandbox-shim: %d bytes", fi.Size())
}
