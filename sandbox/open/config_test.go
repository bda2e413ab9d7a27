package open_test

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/sandbox/open"
)

// --image, --container and --mount select docker unless --backend says
// otherwise, on the command line and for Go API users alike.
func TestBackendName(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "local"},
		{[]string{"--image", "img"}, "docker"},
		{[]string{"--container", "c1"}, "docker"},
		{[]string{"--mount", "/a:/b"}, "docker"},
		{[]string{"--image", "img", "--backend", "k8s"}, "k8s"},
		{[]string{"--backend", "local", "--image", "img"}, "local"},
		{[]string{"--host", "h"}, "local"}, // ssh stays explicit
	} {
		var cfg open.Config
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		cfg.RegisterFlags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		if got := cfg.BackendName(); got != c.want {
			t.Errorf("%q: BackendName() = %q, want %q", c.args, got, c.want)
		}
	}
	if got := (&open.Config{Docker: open.DockerConfig{Image: "img"}}).BackendName(); got != "docker" {
		t.Errorf("Config{Docker.Image}: %q, want docker", got)
	}
}

// Open resolves an empty Backend the same way: a Config with only
// Docker.Container set is not refused as "needs --backend docker".
func TestOpenImpliesDocker(t *testing.T) {
	_, err := open.Open(t.Context(), open.Config{Docker: open.DockerConfig{Container: "pi-sandbox-no-such-container"}, NoHelper: true})
	if err == nil {
		t.Fatal("Open of a missing container succeeded")
	}
	if strings.Contains(err.Error(), "need --backend docker") {
		t.Errorf("Open did not imply docker: %v", err)
	}
}
