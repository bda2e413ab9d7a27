package sshops_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// TestMain builds a static pi-sandbox binary for the shim (uploaded to the
// test sshd's user) unless PI_SANDBOX_SHIM_BIN names one. When the build
// fails the backend runs without the shim and the shim-only cases skip.
func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	if os.Getenv("PI_SANDBOX_SHIM_BIN") == "" {
		tmp, err := os.MkdirTemp("", "sshops-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(tmp)
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		out := filepath.Join(tmp, "pi-sandbox-shim")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./cmd/pi-sandbox-shim")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "sshops test: no shim (go build ./cmd/pi-sandbox-shim: %v)\n%s", err, b)
		} else {
			os.Setenv("PI_SANDBOX_SHIM_BIN", out)
		}
	}
	return m.Run()
}
