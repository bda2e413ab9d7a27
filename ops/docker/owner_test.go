package docker

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

// TestMountOwnerSpec: an Image container with a mount and no user runs as
// the mount's owner; a given user wins; a remote engine's mount is not
// looked at here.
func TestMountOwnerSpec(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(t, "needs root to give a directory to another uid")
	}
	t.Setenv("DOCKER_HOST", "")
	d := t.TempDir()
	if err := os.Chown(d, 1001, 1002); err != nil {
		t.Fatal(err)
	}
	spec := func(user string) string {
		cc, _, err := HardenedSpec(Config{Image: "img", User: user, Mounts: []Mount{{Source: d, Target: "/workspace"}}}, KindEphemeral, 0)
		if err != nil {
			t.Fatal(err)
		}
		return cc.User
	}
	if u := spec(""); u != "1001:1002" {
		t.Errorf("owner default: %q", u)
	}
	if u := spec("0:0"); u != "0:0" {
		t.Errorf("given user: %q", u)
	}
	t.Setenv("DOCKER_HOST", "tcp://engine.invalid:2376")
	if u := spec(""); u != DefaultUser {
		t.Errorf("remote engine: %q", u)
	}
}

func TestCheckUser(t *testing.T) {
	for _, ok := range []string{"1000", "1000:1000", "user", "user:staff", "1000:staff", "_x.y-z"} {
		if err := CheckUser(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a b", "1:2:3", ":1", "1:", "-x", "a/b"} {
		if err := CheckUser(bad); !errors.Is(err, ops.ErrConfig) {
			t.Errorf("%q: %v, want ops.ErrConfig", bad, err)
		}
	}
}

func TestImageMissingFix(t *testing.T) {
	for image, fix := range map[string]string{"alpine:3.20": "`docker pull alpine:3.20`", "pi-sandbox/debian": "`pi-sandbox image build`"} {
		if err := imageMissing(image); !errors.Is(err, ops.ErrConfig) || !strings.Contains(err.Error(), fix) {
			t.Errorf("%s: %v", image, err)
		}
	}
}
