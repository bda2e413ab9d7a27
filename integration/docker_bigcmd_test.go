package integration

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

// TestDockerLongCommand: a command longer than one exec argument may be
// (128 KiB on Linux) still runs, with its exit status.
func TestDockerLongCommand(t *testing.T) {
	needImage(t, "pi-sandbox/busybox")
	b := newBackend(t, docker.Config{Image: "pi-sandbox/busybox"})
	body := strings.Repeat("0123456789abcdef", 200<<10/16)
	var out bytes.Buffer
	err := b.Run(t.Context(), &ops.Cmd{Command: "printf %s '" + body + "' | wc -c; exit 7", Output: &out})
	var ee *ops.ExitError
	if !errors.As(err, &ee) || ee.Code != 7 || strings.TrimSpace(out.String()) != "204800" {
		t.Fatalf("Run = %v, output %q", err, out.String())
	}
}
