package open

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/sandbox"
)

// Config selects and configures a backend and holds the sandbox's
// confinement and policy. The zero value is the local backend in the current
// directory.
type Config struct {
	// Backend is "local" (the zero value), "docker" or "ssh".
	Backend string
	// WorkDir is a path on the target. Zero: local, the current directory;
	// docker, /workspace (or the container's working directory with
	// Docker.Container); ssh, the remote home.
	WorkDir string

	// MaxBackground bounds the background process groups the sandbox
	// owns (--max-background; zero: 64).
	MaxBackground int

	Docker DockerConfig
	SSH    SSHConfig

	// Config is the confinement and policy (--unconfined, --allow-root,
	// --read-only-root, the policy flags and --config FILE).
	sandbox.Config
}

// DockerConfig holds the docker backend's flags.
type DockerConfig struct {
	Image     string   // --image: an ephemeral hardened container, removed afterwards
	Container string   // --container: an existing container, used as it is
	Mounts    []string // --mount HOST:TARGET[:ro], for --image
	User      string   // --user UID:GID
	Runtime   string   // --runtime NAME: the engine's OCI runtime for --image (runsc: gVisor)
}

// SSHConfig holds the ssh backend's flags.
type SSHConfig struct {
	Host       string // --host [user@]host[:port] or an alias from ~/.ssh/config
	Identity   string // --identity FILE
	KnownHosts string // --known-hosts FILE
}

// RegisterFlags adds the backend flags shared by every command (DESIGN §8).
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Backend, "backend", "local", "backend: local, docker or ssh")
	fs.StringVar(&c.WorkDir, "workdir", "", "working directory on the target (default: local, the current directory; docker, /workspace; ssh, the remote home)")
	fs.IntVar(&c.MaxBackground, "max-background", 0, "at most N background process groups (commands' leftovers kept running; default 64)")
	fs.StringVar(&c.Docker.Image, "image", "", "docker: run an ephemeral hardened container from this image")
	fs.StringVar(&c.Docker.Container, "container", "", "docker: use this existing container")
	fs.Var((*listFlag)(&c.Docker.Mounts), "mount", "docker: bind mount HOST:TARGET[:ro] (repeatable, with --image)")
	fs.StringVar(&c.Docker.User, "user", "", "docker: run as UID:GID")
	fs.StringVar(&c.Docker.Runtime, "runtime", "", "docker: the engine's OCI runtime for --image, e.g. runsc (gVisor; see `make runtimes`)")
	fs.StringVar(&c.SSH.Host, "host", "", "ssh: [user@]host[:port] or an alias from ~/.ssh/config")
	fs.StringVar(&c.SSH.Identity, "identity", "", "ssh: private key file")
	fs.StringVar(&c.SSH.KnownHosts, "known-hosts", "", "ssh: known_hosts file (default ~/.ssh/known_hosts)")
	fs.BoolVar(&c.Unconfined, "unconfined", false, "turn path confinement off (file tools may touch any path)")
	fs.Var((*listFlag)(&c.AllowRoots), "allow-root", "allow file tools under DIR too (repeatable)")
	fs.Var((*listFlag)(&c.ReadOnlyRoots), "read-only-root", "allow file tools to read under DIR (repeatable)")
	c.Policy.RegisterFlags(fs)
}

// Validate checks the flags' combinations.
func (c *Config) Validate() error {
	switch c.Backend {
	case "", "local":
		if c.Docker.Image != "" || c.Docker.Container != "" || len(c.Docker.Mounts) > 0 || c.Docker.User != "" || c.Docker.Runtime != "" {
			return errors.New("open: --image, --container, --mount, --user and --runtime need --backend docker")
		}
		if c.SSH.Host != "" || c.SSH.Identity != "" || c.SSH.KnownHosts != "" {
			return errors.New("open: --host, --identity and --known-hosts need --backend ssh")
		}
	case "docker":
		if c.Docker.Image != "" && c.Docker.Container != "" {
			return errors.New("open: --image and --container are mutually exclusive")
		}
		if c.Docker.Image == "" && c.Docker.Container == "" {
			return errors.New("open: --backend docker needs --image IMG or --container ID")
		}
		if len(c.Docker.Mounts) > 0 && c.Docker.Image == "" {
			return errors.New("open: --mount needs --image")
		}
		if c.Docker.Runtime != "" && c.Docker.Image == "" {
			return errors.New("open: --runtime needs --image (a container keeps the runtime it was created with)")
		}
	case "ssh":
		if c.SSH.Host == "" {
			return errors.New("open: --backend ssh needs --host")
		}
	default:
		return fmt.Errorf("open: unknown backend %q (want local, docker or ssh)", c.Backend)
	}
	return nil
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }
