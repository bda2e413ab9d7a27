package docker

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/ops/shim"
)

// helperDir is where a container this package creates on an engine of
// this host finds the helper binary: a read-only bind mount of the host's
// helper cache (helperCacheDir), each binary under its content-addressed
// name, execute-only. Elsewhere the binary is uploaded (uploadShim).
const helperDir = "/opt/pi-sandbox-helper"

// helperCacheKeep is how long an unused binary stays in the helper cache.
const helperCacheKeep = 7 * 24 * time.Hour

// helperSetup is what createContainer decided about the helper binary of
// the container it made.
type helperSetup struct {
	arch    string // the image's GOARCH
	mounted bool   // helperDir holds the binary
	why     string // why it is not mounted (it is uploaded)
}

// engineOnThisHost reports whether the engine runs on this host, so that a
// path here names the same file there: the client reaches it over a unix
// socket (DOCKER_HOST unset or unix://) and the engine reports this host's
// name (Info.Name, the hostname of the engine's host). A socket forwarded
// from a VM (Docker Desktop, podman machine) or a host's socket mounted
// into a container fails the second test; tcp:// and ssh:// the first.
func engineOnThisHost(daemonHost, engineName, hostname string) bool {
	if daemonHost != "" && !strings.HasPrefix(daemonHost, "unix://") {
		return false
	}
	return engineName != "" && strings.EqualFold(engineName, hostname)
}

// EngineOnThisHost reports whether the engine a client reaches at
// daemonHost (client.DaemonHost), naming itself engineName (Info.Name),
// runs on this host: containers created there have the helper binary
// bind-mounted read-only at /opt/pi-sandbox-helper instead of uploaded.
func EngineOnThisHost(daemonHost, engineName string) bool {
	host, _ := os.Hostname()
	return engineOnThisHost(daemonHost, engineName, host)
}

// imageArch is the GOARCH of an image's Architecture ("" when it does not
// say: this host's).
func imageArch(arch string) string {
	switch arch {
	case "":
		return runtime.GOARCH
	case "x86_64":
		return "amd64"
	case "aarch64":
		return "arm64"
	}
	return arch
}

// chooseHelper picks the helper binary for a container of cfg.Image
// (architecture arch, as the image says) and, when the engine runs on this
// host (the client's daemonHost, the engine's engineName), the bind mount that makes it visible in the
// container. No binary for the image's architecture is an error unless
// cfg.NoHelper asks for the fallback: a container we create always runs
// the helper.
func chooseHelper(cfg *Config, arch, daemonHost, engineName string) (helperSetup, *mount.Mount, error) {
	hs := helperSetup{arch: imageArch(arch)}
	if cfg.shim == nil {
		sf, err := readShim(cfg)
		if err != nil {
			return hs, nil, err
		}
		cfg.shim = sf
	}
	if err := cfg.shim.choose(hs.arch); err != nil {
		if cfg.NoHelper {
			return hs, nil, nil
		}
		return hs, nil, fmt.Errorf("docker: image %s is linux/%s: %w", cfg.Image, hs.arch, err)
	}
	host, _ := os.Hostname()
	switch {
	case cfg.Runtime == "runsc":
		// gVisor's loader reads an executable with the caller's rights:
		// an execute-only binary does not run there (unsealShim).
		hs.why = "gVisor cannot run an execute-only binary"
		return hs, nil, nil
	case !engineOnThisHost(daemonHost, engineName, host):
		hs.why = fmt.Sprintf("the engine (%s, host %q) is not on this host (%q)", daemonHost, engineName, host)
		return hs, nil, nil
	}
	dir, err := helperCache(cfg.shim.up)
	if err != nil {
		hs.why = err.Error()
		return hs, nil, nil
	}
	hs.mounted = true
	return hs, &mount.Mount{Type: mount.TypeBind, Source: dir, Target: helperDir, ReadOnly: true}, nil
}

// mountRefused reports whether the engine refused a container because of
// the helper's bind mount (it cannot see the host path): the error names
// the source.
func mountRefused(err error, m *mount.Mount) bool {
	return err != nil && m != nil && strings.Contains(err.Error(), m.Source)
}

// startWithHelper creates and starts the container with the helper's bind
// mount m and the daemon's host socket directory sm (nil: none) and
// returns its id; an engine that refuses either mount (it does not see
// this host's paths after all) gets the container without both, and the
// binary is uploaded.
func startWithHelper(ctx context.Context, cli *client.Client, cfg *Config, cc *container.Config, hc *container.HostConfig, m, sm *mount.Mount) (string, error) {
	base := hc.Mounts
	for _, x := range []*mount.Mount{m, sm} {
		if x != nil {
			hc.Mounts = append(append([]mount.Mount(nil), hc.Mounts...), *x)
		}
	}
	id, what, err := createStart(ctx, cli, cfg, cc, hc)
	if m != nil && (mountRefused(err, m) || mountRefused(err, sm)) {
		hc.Mounts = base
		cfg.helper.mounted, cfg.helper.why = false, "the engine could not mount "+m.Source
		if sm != nil {
			removeHostSock(cc.Labels[LabelHostSock])
			delete(cc.Labels, LabelHostSock)
		}
		id, what, err = createStart(ctx, cli, cfg, cc, hc)
	}
	if err != nil {
		if what == "" {
			return "", err
		}
		return "", refusal(what, cfg, err)
	}
	return id, nil
}

// createStart creates and starts a container (with a lifetime, its keeper
// installed between the two); on failure it says which engine step failed
// ("" for an error already classified), and a container created is
// removed.
func createStart(ctx context.Context, cli *client.Client, cfg *Config, cc *container.Config, hc *container.HostConfig) (id, what string, err error) {
	res, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cc, HostConfig: hc, Name: cfg.name})
	if err != nil {
		return "", "container create", err
	}
	if cfg.hasLifetime() {
		if err := installKeeper(ctx, cli, res.ID, cfg); err != nil {
			removeContainer(cli, res.ID)
			return "", "", err // already classified
		}
	}
	if _, err := cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		removeContainer(cli, res.ID)
		return "", "container start", err
	}
	return res.ID, "", nil
}

// helperCacheDir is the host directory holding the helper binaries that
// containers mount (helperDir).
func helperCacheDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for the helper binary: %w", err)
	}
	return filepath.Join(d, "pi-sandbox", "helper"), nil
}

var helperCacheMu sync.Mutex

// helperCache makes sure the helper cache holds u under its content
// address, execute-only (mode 0111: a process exec'd from it by the
// sandbox user is not dumpable, and the binary cannot be read or changed
// from the container), and returns the directory. A copy is checked
// against u's hash as it is written; binaries unused for a week go.
func helperCache(u *shim.Upload) (string, error) {
	dir, err := helperCacheDir()
	if err != nil {
		return "", err
	}
	helperCacheMu.Lock()
	defer helperCacheMu.Unlock()
	p := filepath.Join(dir, u.Name())
	now := time.Now()
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Size() == u.Size && fi.Mode().Perm() == 0o111 {
		os.Chtimes(p, now, now) // in use: kept by the pruning
		return dir, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("helper cache: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", fmt.Errorf("helper cache: %w", err)
	}
	if err := copyExecOnly(u, dir, p); err != nil {
		return "", fmt.Errorf("helper cache: %w", err)
	}
	pruneHelperCache(dir, now.Add(-helperCacheKeep))
	return dir, nil
}

// copyExecOnly writes u's content to p through a temporary file in dir.
func copyExecOnly(u *shim.Upload, dir, p string) error {
	r, err := u.Open()
	if err != nil {
		return err
	}
	defer r.Close()
	f, err := os.CreateTemp(dir, "."+u.Name()+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = io.Copy(f, r)
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o111)
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// pruneHelperCache removes the binaries (and temporary files) of dir not
// used since before. A container that runs one keeps its copy (the bind
// mount holds the file).
func pruneHelperCache(dir string, before time.Time) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !strings.Contains(e.Name(), shim.BinaryName+"-") {
			continue
		}
		fi, err := e.Info()
		if err == nil && fi.Mode().IsRegular() && fi.ModTime().Before(before) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// mountedHelper returns the host directory an existing container of ours
// has mounted read-only at helperDir (one created on this host), "" when
// none: the probe may take the binary from there.
func mountedHelper(mounts []container.MountPoint) string {
	for _, m := range mounts {
		if m.Destination == helperDir && m.Type == mount.TypeBind && !m.RW && m.Source != "" {
			return m.Source
		}
	}
	return ""
}

// refreshMounted makes sure the helper cache that an existing container
// mounts from src holds the binary sf chose (a week unused removes it),
// when src is this user's cache. It reports whether the probe may look
// for it there.
func refreshMounted(src string, sf *shimFile) bool {
	if src == "" {
		return false
	}
	if dir, err := helperCacheDir(); err == nil && dir == src && sf.up != nil {
		helperCache(sf.up)
	}
	return true
}
