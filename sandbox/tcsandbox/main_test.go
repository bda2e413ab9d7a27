package tcsandbox_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/images"
	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

const testImage = "pi-sandbox/busybox"

// TestMain needs an engine with the busybox image (built when missing, in
// seconds). Without one the package's tests and example do not run: the
// example cannot skip, so the whole binary says why and exits, except under
// CI=true, where that is a failure.
func TestMain(m *testing.M) {
	if os.Getenv("TESTCONTAINERS_RYUK_DISABLED") == "" {
		// Ryuk's image cannot be pulled here; cleanup is the tests' own.
		os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
	if reason := needEngine(); reason != "" {
		fmt.Fprintln(os.Stderr, "tcsandbox: skipping the tests:", reason)
		if os.Getenv("CI") == "true" {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func needEngine() string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli, err := docker.NewClient()
	if err != nil {
		return "no Docker engine: " + err.Error()
	}
	defer cli.Close()
	if _, err := docker.Ping(ctx, cli); err != nil {
		return "no Docker engine: " + err.Error()
	}
	if err := (&images.Builder{Client: cli}).Ensure(ctx, testImage); err != nil {
		return "image " + testImage + ": " + err.Error()
	}
	return ""
}
