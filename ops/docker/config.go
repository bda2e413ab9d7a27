package docker

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/target"
)

// Labels put on everything this package creates, so gc and leak checks find
// it.
const (
	// LabelManaged marks a pi-sandbox container ("true").
	LabelManaged = "pi-sandbox.managed"
	// LabelKind is "ephemeral" (removed by Close) or "sandbox" (from Up).
	LabelKind = "pi-sandbox.kind"
)

// Defaults of the hardened profile.
const (
	DefaultUser      = "1000:1000"
	DefaultWorkDir   = "/workspace"
	DefaultStateDir  = "/var/lib/pi-sandbox"
	DefaultMemory    = 2 << 30
	DefaultCPUs      = 2.0
	DefaultPidsLimit = 2048
	DefaultTmpSize   = 512 << 20
)

// Config configures a docker backend. The zero value of every field except
// the image or container is the hardened profile; each relaxation is a named
// field. New copies the struct before filling defaults.
type Config struct {
	// Image runs an ephemeral container from this local image (it is never
	// pulled) with the hardened profile; Close removes it and its volumes.
	// Exactly one of Image and Container must be set.
	Image string
	// Container uses an existing running container as it is: no profile is
	// applied and Close removes only what the backend put inside it.
	Container string
	// RemoveOnClose, with Container, makes Close remove the container and
	// its volumes as for Image: a claimed pool member that is the caller's
	// alone.
	RemoveOnClose bool

	// Client is the engine client. Zero: NewClient() (DOCKER_HOST etc.),
	// closed by Close.
	Client *client.Client

	// WorkDir is the working directory in the container. Zero: /workspace
	// for Image (a fresh volume unless a mount covers it); for Container,
	// the container's working directory, else /.
	WorkDir string
	// User is "UID[:GID]" or "NAME[:GROUP]" (resolved by the engine in the
	// image) for every command and file operation. Zero for Image: the
	// owner (uid:gid) of the first mount's source when this host can stat
	// it and it is not root's, else 1000:1000 (uid 0 only when asked for);
	// for Container, the container's user.
	User string
	// Mounts are bind mounts for an Image container.
	Mounts []Mount
	// Note, when set, receives what the person who opens the sandbox
	// should know about its configuration (a root-owned mount the default
	// user cannot write to, and what to do).
	Note func(string)
	// Labels are added to the container and volumes we create (for example
	// a per-run label in tests); the managed labels are always set.
	Labels map[string]string
	// Env holds KEY=VALUE entries for every command, on top of the image's
	// environment and the non-interactive defaults (PAGER=cat ...). Nothing
	// of the host's environment is passed.
	Env []string

	// Memory is the memory limit in bytes. Zero: 2 GiB. Negative: none.
	Memory int64
	// CPUs is the CPU limit. Zero: 2, capped at the engine's CPU count.
	// Negative: none.
	CPUs float64
	// PidsLimit caps processes and threads. Zero: 2048. Negative: none.
	PidsLimit int64
	// TmpSize is the size of the /tmp tmpfs. Zero: 512 MiB.
	TmpSize int64

	// AllowNetwork attaches the container to the engine's default network.
	// Zero: network "none".
	AllowNetwork bool
	// WritableRootfs leaves the root file system writable. Zero: read-only.
	WritableRootfs bool
	// AllowNewPrivileges drops no-new-privileges. Zero: set.
	AllowNewPrivileges bool
	// CapAdd lists capabilities kept despite the CapDrop ALL default.
	CapAdd []string
	// NoInit runs without the engine's init as PID 1 (orphans are then not
	// reaped). Zero: HostConfig.Init.
	NoInit bool

	// Runtime is the engine's OCI runtime for an Image container
	// (HostConfig.Runtime), e.g. "runsc" for gVisor once registered (make
	// runtimes). Zero: the engine's default (runc). A runtime the engine
	// does not list is an error before anything is created.
	Runtime string

	// ShimBinary is the host path of the static helper binary
	// (pi-sandbox-shim) to mount or upload into the container; a
	// container of another architecture gets pi-sandbox-shim-linux-GOARCH
	// from beside it (shim.Binaries). Zero: shim.HostBinary(). Without a
	// usable one New fails with a *shim.BinaryError unless NoHelper is set.
	ShimBinary string
	// NoHelper asks for the fallback path: every operation is its own exec
	// instead of a request to the long-lived helper, and the helper binary
	// is not required. Commands still run under it (`__shim run`) when it
	// is there; without it the plain wrapper runs them, a process that
	// calls setsid itself survives a kill, and Info.Limits says so. Zero:
	// the helper. A container we create (Image, Up, pools) always runs
	// it: where it cannot, New fails naming the cause; an existing
	// container that cannot run it (an architecture without a binary, no
	// exec-capable directory) uses the fallback and Info.Limits says why.
	NoHelper bool
	// MaxBackground bounds the background process groups the helper owns
	// (zero: 64).
	MaxBackground int
	// MaxSavedOutput bounds the bytes of the sandbox's saved outputs (bash's
	// full-output files, background logs) in all: Info.SavedOutputTotal.
	// Zero: ops.DefaultSavedOutputTotal; negative: none. Up records it in
	// the container (LabelMaxSavedOutput), so that every later backend on
	// the container applies it.
	MaxSavedOutput int64

	// TTL ends an Image container (Up's, New's) that long after its start,
	// or for a pool's member after its claim; IdleTimeout ends it after
	// that long without a client call (a running call is activity,
	// background processes are not). The container's init enforces both
	// (lifetime.go): every process is killed and the engine removes the
	// container with its volumes. Zero: none.
	TTL, IdleTimeout time.Duration
	// MaxIdle, in a pool's configuration, ends an idle member that no
	// claim took within that long after its creation. Zero: none.
	MaxIdle time.Duration

	// name is the container's name ("" lets the engine choose): a pool
	// names its members.
	name string
	// waitClaim: a pool's idle member, whose lifetime starts at its claim.
	waitClaim bool
	// shim is the host's helper binary (readShim), found before anything
	// is created; helper is what createContainer decided about it.
	shim   *shimFile
	helper helperSetup
}

// Mount is a bind mount.
type Mount struct {
	Source   string // host path (on the engine's host)
	Target   string // absolute path in the container
	ReadOnly bool
}

// ParseMount parses HOST:TARGET[:ro].
func ParseMount(s string) (Mount, error) {
	src, dst, ro, err := target.ParseMount(s)
	if err != nil {
		return Mount{}, fmt.Errorf("docker: %w", err)
	}
	return Mount{Source: src, Target: dst, ReadOnly: ro}, nil
}

// Errors from New for a bad configuration.
var (
	ErrNoTarget        = errors.New("docker: config needs Image or Container")
	ErrImageAndTarget  = errors.New("docker: config has both Image and Container")
	ErrMountsNeedImage = errors.New("docker: Mounts need Image")
	// ErrRuntimeNeedsImage: an existing container keeps the runtime it was
	// created with.
	ErrRuntimeNeedsImage = errors.New("docker: Runtime needs Image (a container keeps the runtime it was created with)")
)

func (c *Config) validate() error {
	switch {
	case c.Image == "" && c.Container == "":
		return ErrNoTarget
	case c.Image != "" && c.Container != "":
		return ErrImageAndTarget
	case len(c.Mounts) > 0 && c.Image == "":
		return ErrMountsNeedImage
	case c.Runtime != "" && c.Image == "":
		return ErrRuntimeNeedsImage
	}
	if err := c.validateLifetime(); err != nil {
		return err
	}
	if c.WorkDir != "" && (!path.IsAbs(c.WorkDir) || path.Clean(c.WorkDir) != c.WorkDir) {
		return fmt.Errorf("docker: WorkDir %q is not an absolute clean path", c.WorkDir)
	}
	for _, kv := range c.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("docker: bad Env entry %q", kv)
		}
	}
	if c.User != "" {
		if err := CheckUser(c.User); err != nil {
			return err
		}
	}
	if c.localEngine() {
		for _, m := range c.Mounts {
			if _, err := os.Stat(m.Source); err != nil {
				return ops.ConfigError("docker: mount source %s: %w", m.Source, err)
			}
		}
	}
	return nil
}

// Validate checks c as New and Up do before anything is created: the
// fields' combinations, the syntax of User and, when the engine runs on
// this host, that every mount's source exists. Its errors satisfy
// errors.Is(err, ops.ErrConfig) where the fix is in the configuration.
func (c *Config) Validate() error { return c.validate() }

// labels returns our labels plus the extra ones.
func (c *Config) labels(kind string) map[string]string {
	l := map[string]string{LabelManaged: "true", LabelKind: kind}
	for k, v := range c.Labels {
		l[k] = v
	}
	return l
}

// baseEnv is what every command gets before Config.Env and Cmd.Env
// (non-interactive defaults).
var baseEnv = ops.NonInteractiveEnv()
