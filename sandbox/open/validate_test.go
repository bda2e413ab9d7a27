package open

import (
	"errors"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// TestValidateUserAndMounts: --user's syntax and the --mount sources are
// checked before anything is created, as configuration errors; user names
// are the engine's to resolve.
func TestValidateUserAndMounts(t *testing.T) {
	t.Setenv("DOCKER_HOST", "")
	dir := t.TempDir()
	docker := func(user string, mounts ...string) Config {
		return Config{Backend: "docker", Docker: DockerConfig{Image: "img", User: user, Mounts: mounts}}
	}
	k8s := func(user string, mounts ...string) Config {
		return Config{Backend: "k8s", Docker: DockerConfig{Image: "img", User: user, Mounts: mounts}}
	}
	for _, tt := range []struct {
		cfg  Config
		want string // "" valid, else a part of the error
	}{
		{docker("1001:1001", dir+":/workspace"), ""},
		{docker("1001"), ""},
		{docker("abc"), ""},
		{docker("abc:staff"), ""},
		{docker("a b"), `user "a b": want UID[:GID] or NAME[:GROUP]`},
		{docker("1:2:3"), "want UID[:GID] or NAME[:GROUP]"},
		{docker(":1"), "want UID[:GID] or NAME[:GROUP]"},
		{docker("", dir+"/absent:/workspace"), "mount source " + dir + "/absent"},
		{docker("", "relative:/workspace"), "both paths must be absolute"},
		{k8s("1001:1001", "/on/the/node:/workspace"), ""},
		{k8s("abc"), "want numeric UID[:GID]"},
		{k8s("", "x:/w"), "both paths must be absolute"},
	} {
		err := tt.cfg.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%+v: %v", tt.cfg.Docker, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ops.ErrConfig)):
			t.Errorf("%+v: error %v, want ops.ErrConfig containing %q", tt.cfg.Docker, err, tt.want)
		}
	}
	// The source of a remote engine's mount is on its host, not here.
	t.Setenv("DOCKER_HOST", "tcp://engine.invalid:2376")
	remote := docker("", dir+"/absent:/workspace")
	if err := remote.Validate(); err != nil {
		t.Errorf("remote engine: %v", err)
	}
}
