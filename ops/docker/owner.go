package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// userSyntax is UID[:GID] or NAME[:GROUP] (names as the engine accepts them).
var userSyntax = regexp.MustCompile(`^[A-Za-z0-9_.][A-Za-z0-9_.-]*(:[A-Za-z0-9_.][A-Za-z0-9_.-]*)?$`)

// CheckUser checks the syntax of a User: UID[:GID] or NAME[:GROUP]. Names
// are resolved by the engine in the image when the container is created.
func CheckUser(s string) error {
	if !userSyntax.MatchString(s) {
		return ops.ConfigError("docker: user %q: want UID[:GID] or NAME[:GROUP]", s)
	}
	return nil
}

// numericUser parses "UID[:GID]"; a missing GID is 0, as the engine makes
// it for a uid the image does not list.
func numericUser(s string) (uid, gid int, ok bool) {
	u, g, hasG := strings.Cut(s, ":")
	uid, err := strconv.Atoi(u)
	if err != nil || uid < 0 {
		return 0, 0, false
	}
	if hasG {
		if gid, err = strconv.Atoi(g); err != nil || gid < 0 {
			return 0, 0, false
		}
	}
	return uid, gid, true
}

// localEngine reports whether the engine runs on this host (a unix socket),
// so a mount source can be looked at here.
func (c *Config) localEngine() bool {
	host := os.Getenv("DOCKER_HOST")
	if c.Client != nil {
		host = c.Client.DaemonHost()
	}
	return host == "" || strings.HasPrefix(host, "unix://")
}

// ownStateDir makes the state volume usable for a user other than the
// images' 1000:1000 (root's for an image that does not have the
// directory): a directory of the user's in it, user-UID, which the probe
// takes as its state directory when the volume's root is not writable. The
// engine applies the ownership of a directory entry it extracts, so nothing
// in the container needs a capability for it; it does not change the
// ownership of the directory it extracts into. A user the engine resolves
// by name gets none (the probe then uses /var/tmp or /tmp).
func ownStateDir(ctx context.Context, cli *client.Client, id string, cfg *Config) error {
	uid, gid, ok := numericUser(cfg.User)
	if !ok || cfg.User == DefaultUser {
		return nil
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "user-" + strconv.Itoa(uid) + "/", Typeflag: tar.TypeDir, Mode: 0o700, Uid: uid, Gid: gid})
	tw.Close()
	if _, err := cli.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: DefaultStateDir, Content: &buf}); err != nil {
		return transportErr("make the state directory of user "+cfg.User, err)
	}
	return nil
}

// workDirMounted reports whether a mount covers the working directory.
func (c *Config) workDirMounted() bool {
	for _, m := range c.Mounts {
		if m.Target == c.WorkDir || strings.HasPrefix(c.WorkDir, strings.TrimSuffix(m.Target, "/")+"/") {
			return true
		}
	}
	return false
}

// imageMissing is the configuration error of an image the engine does not
// have: ours are built here, others pulled.
func imageMissing(image string) error {
	fix := "`docker pull " + image + "`"
	if strings.HasPrefix(image, "pi-sandbox/") {
		fix = "`pi-sandbox image build`"
	}
	return ops.ConfigError("docker: image %s is not on the engine (nothing is pulled; run %s)", image, fix)
}

// refusal classifies the engine's answer to creating or starting a
// container: a configuration it refuses (a missing mount source, an
// unknown user or group, an invalid setting) is ops.ErrConfig with the
// engine's reason; anything else is a transport failure.
func refusal(what string, cfg *Config, err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "unable to find user") || strings.Contains(msg, "unable to find group") ||
		strings.Contains(msg, "no matching entries in passwd") || strings.Contains(msg, "no matching entries in group"):
		return ops.ConfigError("docker: %s: the image has no user %q (give --user a UID:GID or a name the image lists): %w", what, cfg.User, err)
	case strings.Contains(msg, "bind source path does not exist") || strings.Contains(msg, "no such file or directory") && strings.Contains(msg, "mount"):
		return ops.ConfigError("docker: %s: a mount source is missing on the engine's host (create it, or fix --mount): %w", what, err)
	case cerrdefs.IsInvalidArgument(err):
		return ops.ConfigError("docker: %s: the engine refuses the configuration: %w", what, err)
	}
	return transportErr(what, err)
}

// stateErr is the configuration error of an existing container that cannot
// serve in its state, with the command that makes it serve.
func stateErr(id, state string) error {
	switch state {
	case "paused":
		return ops.ConfigError("docker: container %s is paused (run `docker unpause %s`)", id, id)
	case "running":
		return nil
	}
	return ops.ConfigError("docker: container %s is not running (%s; run `docker start %s`)", id, state, id)
}

// notFound is the configuration error of a container the engine does not
// know.
func notFound(id string) error {
	return ops.ConfigError("docker: no container %q (see `pi-sandbox ls`)", id)
}

// userRefused is the configuration error of an exec the engine could not
// start as the configured user (it says so on the exec's output), nil when
// out does not say that.
func (b *Backend) userRefused(out []byte) error {
	msg := strings.TrimSpace(string(out))
	if b.user == "" || !(strings.HasPrefix(msg, "unable to find user") || strings.HasPrefix(msg, "unable to find group")) {
		return nil
	}
	return ops.ConfigError("docker: container %.12s: the engine cannot run as user %q (give --user a UID:GID or a name the image lists): %s", b.id, b.user, msg)
}
