package integration

import (
	"bytes"
	"os"
	"testing"

	"github.com/testcontainers/testcontainers-go"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

// TestDockerTestcontainers: testcontainers-go starts a local image without
// pulling (it pulls only when ImageInspect misses) and without its Ryuk
// reaper (TESTCONTAINERS_RYUK_DISABLED=true, exactly), and the backend
// works on the container as an existing one. This is the pattern for
// fixtures such as the sshd image.
func TestDockerTestcontainers(t *testing.T) {
	needImage(t, "pi-sandbox/busybox")
	if os.Getenv("TESTCONTAINERS_RYUK_DISABLED") != "true" {
		// Ryuk's image cannot be pulled here.
		t.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
	l := labels()
	l["pi-sandbox.test"] = "testcontainers"
	ctr, err := testcontainers.Run(t.Context(), "pi-sandbox/busybox:latest",
		testcontainers.WithEntrypoint("/bin/sh", "-c", "trap 'exit 0' TERM; while :; do sleep 1; done"),
		testcontainers.WithLabels(l),
	)
	testcontainers.CleanupContainer(t, ctr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { checkNoContainers(t, "pi-sandbox.test=testcontainers") })
	b := newBackend(t, docker.Config{Container: ctr.GetContainerID(), User: "1000:1000"})
	var out bytes.Buffer
	if err := b.Run(t.Context(), &ops.Cmd{Command: "id -u; pwd", Output: &out}); err != nil || out.String() != "1000\n/workspace\n" {
		t.Fatalf("Run = %v, %q", err, out.String())
	}
}
