package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/target"
	"github.com/pi-sandbox/pi-sandbox/ops/shim"
)

// Labels recording who created an ephemeral container, so gc can tell a
// leaked one (its process is gone) from one in use.
const (
	LabelHost = "pi-sandbox.host"
	LabelPID  = "pi-sandbox.pid"
)

// LabelHelperKey holds an Up sandbox's helper key: a random secret the
// clients read from the engine (processes in the container cannot) and the
// helper daemon must prove, so a process of the sandbox user listening on
// the daemon's socket in its place is never trusted.
const LabelHelperKey = "pi-sandbox.helper-key"

// LabelMaxSavedOutput holds an Up sandbox's Config.MaxSavedOutput in bytes.
const LabelMaxSavedOutput = "pi-sandbox.max-saved-output"

// keepAlive is PID 1's child: it only has to stay up. The trap lets a stop
// end it at once even without an init, and an ephemeral container's
// helper end it once its client is gone (the marker tells the helper it is
// this script) — except for a SIGTERM a hold file (holdPrefix, see
// holdContainer) spares: one each, while its deadline (unix seconds) has
// not passed, and only a file of root's (written by an exec as root; the
// sandbox user, who can write to /tmp, cannot make one, nor remove root's
// from the sticky /tmp, so the script remembers the ones it used).
var keepAlive = keepAliveScript(holdPrefix)

// keepAliveScript is keepAlive with its hold files named prefix*.
func keepAliveScript(prefix string) string {
	return ": " + shim.KeepAliveMarker + "; used=; " +
		"end() { for h in " + prefix + "*; do case \" $used \" in *\" $h \"*) continue;; esac; " +
		"[ -f \"$h\" ] && [ \"$(stat -c %u \"$h\" 2>/dev/null)\" = 0 ] || continue; t=; read -r t <\"$h\"; " +
		"case $t in ''|*[!0-9]*) continue;; esac; n=$(date +%s 2>/dev/null) || n=0; " +
		"[ \"$t\" -ge \"${n:-0}\" ] && { used=\"$used $h\"; kill $! 2>/dev/null; return; }; done; exit 0; }; " +
		"trap end TERM; trap 'exit 0' INT; while :; do sleep 86400 & wait $!; done"
}

// holdPrefix begins the names of the hold files of an ephemeral container
// (keepAlive); /tmp is a tmpfs of the hardened profile.
const holdPrefix = "/tmp/pi-sandbox-hold."

// Kinds of container (the LabelKind value).
const (
	// KindEphemeral is removed by Close; gc removes it once the process
	// that created it (LabelHost, LabelPID) is gone.
	KindEphemeral = "ephemeral"
	// KindSandbox comes from Up and stays until Down or gc --all.
	KindSandbox = "sandbox"
)

// createContainer creates and starts a container from cfg.Image with the
// hardened profile and returns its id. cfg has its defaults filled.
func createContainer(ctx context.Context, cli *client.Client, cfg *Config, kind string) (string, error) {
	img, err := cli.ImageInspect(ctx, cfg.Image)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return "", imageMissing(cfg.Image)
		}
		return "", transportErr("image inspect", err)
	}
	ncpu, engineName, err := checkEngine(ctx, cli, *cfg, true)
	if err != nil {
		return "", err
	}
	// The helper binary for the image's architecture, bind-mounted where
	// the engine is on this host (helper_mount.go).
	hs, hm, err := chooseHelper(cfg, img.Architecture, cli.DaemonHost(), engineName)
	if err != nil {
		return "", err
	}
	cfg.helper = hs
	cc, hc := hardenedSpec(cfg, kind, ncpu)
	// The engine removes a container that ended itself (its lifetime, an
	// ephemeral one's client gone) with its volumes.
	hc.AutoRemove = kind == KindEphemeral || cfg.hasLifetime()
	var sm *mount.Mount // the daemon's host socket directory (hostsock.go)
	if kind == KindSandbox {
		if sm = hostSockMount(cfg); sm != nil {
			cc.Labels[LabelHostSock] = sm.Source
		}
	}
	id, err := startWithHelper(ctx, cli, cfg, cc, hc, hm, sm)
	if err != nil {
		removeHostSock(cc.Labels[LabelHostSock])
		return "", err
	}
	if err := ownStateDir(ctx, cli, id, cfg); err != nil {
		removeContainer(cli, id)
		return "", err
	}
	return id, nil
}

// CheckEngine checks what cfg needs of the engine before a container is
// created — that it lists cfg.Runtime — and returns the engine's CPU count
// (0 when unknown) for [HardenedSpec].
func CheckEngine(ctx context.Context, cli *client.Client, cfg Config) (ncpu int, err error) {
	ncpu, _, err = checkEngine(ctx, cli, cfg, false)
	return ncpu, err
}

// checkEngine is CheckEngine that also returns the engine's host name
// (Info.Name) when wantName is set and the client reaches the engine over
// a unix socket ("" otherwise, and when the engine did not say).
func checkEngine(ctx context.Context, cli *client.Client, cfg Config, wantName bool) (ncpu int, name string, err error) {
	wantName = wantName && strings.HasPrefix(cli.DaemonHost(), "unix://")
	if cfg.Runtime == "" && cfg.CPUs <= 0 && !wantName {
		return 0, "", nil
	}
	res, err := cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		if cfg.Runtime == "" {
			return 0, "", nil // only the CPU cap is lost
		}
		return 0, "", transportErr("info", err)
	}
	if cfg.Runtime != "" {
		if _, ok := res.Info.Runtimes[cfg.Runtime]; !ok {
			return 0, "", ops.ConfigError("docker: the engine has no runtime %q (it lists %s; for runsc run `make runtimes`)", cfg.Runtime, strings.Join(RuntimeNames(res.Info.Runtimes), ", "))
		}
	}
	return res.Info.NCPU, res.Info.Name, nil
}

// RuntimeNames returns the names of an engine's runtimes (Info.Runtimes),
// sorted.
func RuntimeNames[V any](runtimes map[string]V) []string {
	names := make([]string, 0, len(runtimes))
	for n := range runtimes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// HardenedSpec returns the container and host configuration of the
// hardened profile for cfg.Image, as New (kind KindEphemeral) and Up (kind
// KindSandbox) create it: cfg's zero values become the defaults, ncpu > 0
// caps the CPU limit (see [CheckEngine]). An ephemeral spec records this
// host and process (LabelHost, LabelPID) for gc. Other clients of the
// engine (testcontainers, sandbox/tcsandbox) create the same container
// from it.
func HardenedSpec(cfg Config, kind string, ncpu int) (*container.Config, *container.HostConfig, error) {
	if cfg.Image == "" {
		return nil, nil, ErrNoTarget
	}
	if err := cfg.validate(); err != nil {
		return nil, nil, err
	}
	if cfg.hasLifetime() {
		return nil, nil, ops.ConfigError("docker: a lifetime (TTL, IdleTimeout, MaxIdle) needs the container made by New or Up (its init is copied in before the start)")
	}
	cfg.fillImageDefaults()
	cc, hc := hardenedSpec(&cfg, kind, ncpu)
	return cc, hc, nil
}

// hardenedSpec is HardenedSpec for a cfg with its defaults filled.
func hardenedSpec(cfg *Config, kind string, ncpu int) (*container.Config, *container.HostConfig) {
	labels := cfg.labels(kind)
	if kind == KindEphemeral {
		host, _ := os.Hostname()
		labels[LabelHost] = host
		labels[LabelPID] = strconv.Itoa(os.Getpid())
	}
	if kind == KindSandbox {
		var k [32]byte
		rand.Read(k[:])
		labels[LabelHelperKey] = hex.EncodeToString(k[:])
		if cfg.MaxSavedOutput != 0 {
			labels[LabelMaxSavedOutput] = strconv.FormatInt(cfg.MaxSavedOutput, 10)
		}
	}
	hc := &container.HostConfig{
		NetworkMode:    "none",
		CapDrop:        []string{"ALL"},
		CapAdd:         cfg.CapAdd,
		ReadonlyRootfs: !cfg.WritableRootfs,
		Runtime:        cfg.Runtime,
		Tmpfs: map[string]string{
			// Docker's tmpfs default is noexec; the shim and build tools
			// need to run from here.
			"/tmp": fmt.Sprintf("rw,exec,nosuid,nodev,size=%d,mode=1777", cfg.TmpSize),
		},
	}
	if cfg.AllowNetwork {
		hc.NetworkMode = ""
	}
	if !cfg.AllowNewPrivileges {
		hc.SecurityOpt = []string{"no-new-privileges:true"}
	}
	if !cfg.NoInit {
		t := true
		hc.Init = &t
	}
	if cfg.Memory > 0 {
		hc.Memory = cfg.Memory
		hc.MemorySwap = cfg.Memory // no swap: an OOM kill, not a crawl
	}
	if cfg.CPUs > 0 {
		cpus := cfg.CPUs
		if ncpu > 0 && float64(ncpu) < cpus {
			cpus = float64(ncpu)
		}
		hc.NanoCPUs = int64(cpus * 1e9)
	}
	if cfg.PidsLimit > 0 {
		n := cfg.PidsLimit
		hc.PidsLimit = &n
	}
	for _, m := range cfg.Mounts {
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly})
	}
	vol := func(target string) mount.Mount {
		// Anonymous volumes: removed with the container (RemoveVolumes),
		// labelled so a leak is still findable.
		return mount.Mount{Type: mount.TypeVolume, Target: target, VolumeOptions: &mount.VolumeOptions{Labels: labels}}
	}
	if !cfg.workDirMounted() {
		hc.Mounts = append(hc.Mounts, vol(cfg.WorkDir))
	}
	hc.Mounts = append(hc.Mounts, vol(DefaultStateDir))

	cc := &container.Config{
		Image:      cfg.Image,
		User:       cfg.User,
		Labels:     labels,
		Entrypoint: []string{"/bin/sh", "-c", keepAlive},
		Cmd:        []string{},
		WorkingDir: cfg.WorkDir,
		Hostname:   "pi-sandbox",
		Env:        append(append([]string{}, baseEnv...), cfg.Env...),
	}
	if cfg.hasLifetime() {
		// The keeper is PID 1 (it reaps orphans as the engine's init would).
		hc.Init = nil
		cc.Entrypoint = lifetimeSpec(cfg, labels)
		if cfg.IdleTimeout > 0 {
			cc.Env = append(cc.Env, shim.ActivityEnv+"="+keepActivity)
		}
	}
	return cc, hc
}

// removeContainer force-removes id and its anonymous volumes; "already
// gone" is success.
func removeContainer(cli *client.Client, id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}
	_, err := cli.ContainerRemove(ctx, id, opts)
	if cerrdefs.IsConflict(err) {
		// A paused container cannot be removed on some engines; a
		// concurrent removal is a conflict too, and then this fails
		// harmlessly and the retry finds nothing.
		cli.ContainerUnpause(ctx, id, client.ContainerUnpauseOptions{})
		_, err = cli.ContainerRemove(ctx, id, opts)
	}
	for err != nil && !cerrdefs.IsNotFound(err) {
		// Removed meanwhile by someone else: the engine itself (AutoRemove)
		// is done in a moment.
		_, ierr := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		if cerrdefs.IsNotFound(ierr) {
			return nil
		}
		if !cerrdefs.IsConflict(err) || ctx.Err() != nil {
			return transportErr("container remove", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
		_, err = cli.ContainerRemove(ctx, id, opts)
	}
	return nil
}

// transportErr wraps an engine API failure: it never looks like a file
// error, and errors.Is(err, ops.ErrTransport) holds.
func transportErr(what string, err error) error {
	return fmt.Errorf("docker: %s: %w: %w", what, ops.ErrTransport, err)
}

// Up creates a long-lived hardened container from cfg.Image (labelled
// kind "sandbox", not removed by anything but Down or gc --all) and returns
// its id. Use it later with Config.Container.
func Up(ctx context.Context, cfg Config) (string, error) {
	if cfg.Image == "" {
		return "", ErrNoTarget
	}
	if cfg.Container != "" {
		return "", ErrImageAndTarget
	}
	if err := cfg.validate(); err != nil {
		return "", err
	}
	cfg.fillImageDefaults()
	cli, closeCli, err := cfg.client()
	if err != nil {
		return "", err
	}
	defer closeCli()
	return createContainer(ctx, cli, &cfg, KindSandbox)
}

// Down removes a container this package created (and its volumes). A
// container without our label is refused.
func Down(ctx context.Context, cli *client.Client, id string) error {
	res, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return fmt.Errorf("docker: no container %q", id)
		}
		return transportErr("container inspect", err)
	}
	if res.Container.Config == nil || res.Container.Config.Labels[LabelManaged] != "true" {
		return fmt.Errorf("docker: container %q was not created by pi-sandbox (no %s label)", id, LabelManaged)
	}
	if err := removeContainer(cli, res.Container.ID); err != nil {
		return err
	}
	removeHostSock(res.Container.Config.Labels[LabelHostSock])
	return nil
}

// Sandbox is one of our containers, as List reports it.
type Sandbox struct {
	ID, Image, Kind, State, Status string
	Created                        time.Time
	Labels                         map[string]string
}

// List returns the containers carrying our label, plus those matching the
// extra label filters ("key=value").
func List(ctx context.Context, cli *client.Client, labels ...string) ([]Sandbox, error) {
	f := client.Filters{}.Add("label", LabelManaged+"=true")
	if len(labels) > 0 {
		f = f.Add("label", labels...)
	}
	res, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, transportErr("container list", err)
	}
	var out []Sandbox
	for _, c := range res.Items {
		out = append(out, Sandbox{
			ID: c.ID, Image: c.Image, Kind: c.Labels[LabelKind], State: string(c.State), Status: c.Status,
			Created: time.Unix(c.Created, 0), Labels: c.Labels,
		})
	}
	return out, nil
}

// Leaked reports whether s is garbage: not running, or ephemeral and its
// creating process on this host is gone, or ephemeral from another host and
// older than maxAge.
func Leaked(s Sandbox, maxAge time.Duration) bool {
	if s.State != string(container.StateRunning) && s.State != string(container.StatePaused) {
		return true
	}
	if s.Kind != "ephemeral" {
		return false
	}
	host, _ := os.Hostname()
	if s.Labels[LabelHost] == host {
		pid, err := strconv.Atoi(s.Labels[LabelPID])
		return err != nil || !target.ProcessAlive(pid)
	}
	return time.Since(s.Created) > maxAge
}

// GC removes our leaked containers (see Leaked) — all of ours when all is
// set — and returns the removed ids.
func GC(ctx context.Context, cli *client.Client, all bool, maxAge time.Duration) ([]string, error) {
	list, err := List(ctx, cli)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, s := range list {
		if !all && !Leaked(s, maxAge) {
			continue
		}
		if err := removeContainer(cli, s.ID); err != nil {
			return removed, err
		}
		removeHostSock(s.Labels[LabelHostSock])
		removed = append(removed, s.ID)
	}
	// Directories whose container the engine removed itself (a lifetime).
	keep := map[string]bool{}
	for _, s := range list {
		keep[s.Labels[LabelHostSock]] = true
	}
	pruneHostSocks(keep)
	return removed, nil
}

// fillImageDefaults applies the hardened profile's zero-value defaults.
func (c *Config) fillImageDefaults() {
	if c.User == "" {
		c.User = DefaultUser
		if len(c.Mounts) > 0 && c.localEngine() {
			c.User = target.MountUser(c.Mounts[0].Source, DefaultUser, c.Note)
		}
	}
	if c.WorkDir == "" {
		c.WorkDir = DefaultWorkDir
	}
	c.Memory = target.Limit(c.Memory, DefaultMemory)
	c.CPUs = target.Limit(c.CPUs, DefaultCPUs)
	c.PidsLimit = target.Limit(c.PidsLimit, DefaultPidsLimit)
	if c.TmpSize <= 0 {
		c.TmpSize = DefaultTmpSize
	}
	c.WorkDir = path.Clean(c.WorkDir)
}

// client returns cfg.Client or a new one, with the function that releases
// it.
func (c *Config) client() (*client.Client, func(), error) {
	if c.Client != nil {
		return c.Client, func() {}, nil
	}
	cli, err := NewClient()
	if err != nil {
		return nil, nil, err
	}
	return cli, func() { cli.Close() }, nil
}
