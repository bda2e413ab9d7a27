package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops/docker"
	"github.com/pi-sandbox/pi-sandbox/tools"
)

// TestDockerCallsBounded: in a container, grep of a device is refused at
// once, and a background writer on the call's output (`yes &`) no longer
// holds the call open: it is handed to the background with its own log.
func TestDockerCallsBounded(t *testing.T) {
	needImage(t, "pi-sandbox/busybox")
	b := newBackend(t, docker.Config{Image: "pi-sandbox/busybox"})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	info := b.Info()
	_, err := tools.NewGrep(b, info).Execute(ctx, "g", map[string]any{"pattern": "x", "path": "/dev/zero"}, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "Cannot search /dev/zero: it is a character device") {
		t.Errorf("grep /dev/zero: %v", err)
	}
	res, err := tools.NewBash(b, b, info).Execute(ctx, "b", map[string]any{"command": "yes & echo started"}, nil)
	if ctx.Err() != nil {
		t.Fatal("the call with a background writer was still open after a minute")
	}
	if err != nil {
		t.Fatalf("bash: %v", err)
	}
	text := res.Content[0].Text
	if !strings.Contains(text, "kept writing 2s after it exited; they go on in the background, their output goes to ") {
		t.Errorf("no hand-off note in %q", text[max(0, len(text)-400):])
	}
}
