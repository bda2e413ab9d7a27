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
	// Backend is "local", "docker", "ssh" or "k8s". Zero: docker when
	// Docker.Image, Docker.Container or Docker.Mounts is set, else local
	// ([Config.BackendName]).
	Backend string
	// WorkDir is a path on the target. Zero: local, the current directory;
	// docker, /workspace (or the container's working directory with
	// Docker.Container); ssh, the remote home; k8s, /workspace (or the
	// container's working directory with K8s.Pod).
	WorkDir string

	// MaxBackground bounds the background process groups the sandbox
	// owns (--max-background; zero: 64).
	MaxBackground int

	// NoHelper asks for the fallback path on every backend (--no-helper):
	// no long-lived helper, and no need for the pi-sandbox-shim binary.
	// Without it, a session whose helper binary is missing on this machine
	// fails; one whose target cannot run it uses the fallback, and the
	// backend's Info.Limits say why.
	NoHelper bool

	Docker DockerConfig
	SSH    SSHConfig
	K8s    K8sConfig

	// Note, when set, receives what the person who opens the sandbox
	// should know about its configuration, such as a root-owned mount
	// the default user cannot write to and what to do (a CLI prints it on
	// stderr).
	Note func(string)

	// Config is the confinement and policy (--unconfined, --allow-root,
	// --read-only-root, the policy flags and --config FILE).
	sandbox.Config
}

// DockerConfig holds the docker backend's flags.
type DockerConfig struct {
	Image     string   // --image: an ephemeral hardened container, removed afterwards
	Container string   // --container: an existing container, used as it is
	Mounts    []string // --mount HOST:TARGET[:ro], for --image
	// --user UID[:GID] or NAME[:GROUP]. Zero with Image: the owner of the
	// first mount's source (when not root), else 1000:1000.
	User    string
	Runtime string // --runtime NAME: the engine's OCI runtime for --image (runsc: gVisor)
}

// K8sConfig holds the k8s backend's flags. The command line's --image,
// --mount and --user are shared with docker: they fill Docker.Image,
// Docker.Mounts and Docker.User, which apply to k8s when Backend is "k8s"
// and the K8s field is zero. Go API users set the K8s fields.
type K8sConfig struct {
	Kubeconfig string // --kubeconfig FILE (default $KUBECONFIG, then ~/.kube/config)
	Context    string // --context NAME (default the kubeconfig's current context)
	Namespace  string // --namespace NS (default the context's namespace, else "default")
	Pod        string // --pod NAME: an existing pod, used as it is
	// AgentSandbox is --agent-sandbox NAME: the pod of an existing
	// agent-sandbox Sandbox, used as Pod is.
	AgentSandbox string
	Container    string   // --k8s-container NAME: the container of a multi-container pod
	Image        string   // an ephemeral hardened pod from this image, deleted afterwards (--image)
	Mounts       []string // hostPath volumes HOST:TARGET[:ro] for Image (--mount)
	User         string   // UID[:GID] of an Image pod (--user; zero: as for docker when the node is this host)
}

// k8s returns c.K8s with the shared docker flags filled in.
func (c *Config) k8s() K8sConfig {
	k := c.K8s
	if k.Image == "" {
		k.Image = c.Docker.Image
	}
	if len(k.Mounts) == 0 {
		k.Mounts = c.Docker.Mounts
	}
	if k.User == "" {
		k.User = c.Docker.User
	}
	return k
}

// SSHConfig holds the ssh backend's flags.
type SSHConfig struct {
	Host       string // --host [user@]host[:port] or an alias from ~/.ssh/config
	Identity   string // --identity FILE
	KnownHosts string // --known-hosts FILE
}

// BackendName is the backend c selects: Backend, or when it is empty
// "docker" if Docker.Image, Docker.Container or Docker.Mounts is set, and
// "local" otherwise. Open and the CLI's flags resolve an empty Backend
// through it.
func (c *Config) BackendName() string {
	switch {
	case c.Backend != "":
		return c.Backend
	case c.Docker.Image != "" || c.Docker.Container != "" || len(c.Docker.Mounts) > 0:
		return "docker"
	}
	return "local"
}

// RegisterFlags adds the backend flags shared by every command. --backend
// is empty unless given, so that [Config.BackendName] can tell docker
// flags without it.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Backend, "backend", "", "`BACKEND`: local, docker, ssh or k8s (default local; docker when --image, --container or --mount is given)")
	fs.StringVar(&c.WorkDir, "workdir", "", "working `DIR` on the target (default: local, the current directory; docker and k8s, /workspace; ssh, the remote home)")
	fs.IntVar(&c.MaxBackground, "max-background", 0, "at most `N` background process groups (commands' leftovers kept running; default 64)")
	fs.BoolVar(&c.NoHelper, "no-helper", false, "run without the helper (pi-sandbox-shim): one exec, ssh session or local call per operation; without the binary a process that calls setsid itself survives a kill")
	fs.StringVar(&c.Docker.Image, "image", "", "docker, k8s: run an ephemeral hardened container (pod) from `IMAGE`")
	fs.StringVar(&c.Docker.Container, "container", "", "docker: use the existing container `ID`")
	fs.Var((*listFlag)(&c.Docker.Mounts), "mount", "docker, k8s: bind mount (k8s: hostPath) `HOST:TARGET[:ro]` (repeatable, with --image)")
	fs.StringVar(&c.Docker.User, "user", "", "docker, k8s: run as `UID:GID` or NAME[:GROUP] (default: the first mount's owner, else 1000:1000)")
	fs.StringVar(&c.Docker.Runtime, "runtime", "", "docker: the engine's OCI `RUNTIME` for --image, e.g. runsc (gVisor: make runtimes installs it)")
	fs.StringVar(&c.SSH.Host, "host", "", "ssh: `HOST` as [user@]host[:port] or an alias from ~/.ssh/config")
	fs.StringVar(&c.SSH.Identity, "identity", "", "ssh: private key `FILE`")
	fs.StringVar(&c.SSH.KnownHosts, "known-hosts", "", "ssh: known_hosts `FILE` (default ~/.ssh/known_hosts)")
	fs.StringVar(&c.K8s.Kubeconfig, "kubeconfig", "", "k8s: kubeconfig `FILE` (default $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(&c.K8s.Context, "context", "", "k8s: kubeconfig context `NAME` (default its current context)")
	fs.StringVar(&c.K8s.Namespace, "namespace", "", "k8s: namespace `NS` (default the context's, else default)")
	fs.StringVar(&c.K8s.Pod, "pod", "", "k8s: use the existing pod `NAME`")
	fs.StringVar(&c.K8s.AgentSandbox, "agent-sandbox", "", "k8s: use the pod of the existing agent-sandbox Sandbox `NAME`")
	fs.StringVar(&c.K8s.Container, "k8s-container", "", "k8s: the container `NAME` of a multi-container --pod")
	fs.BoolVar(&c.Unconfined, "unconfined", false, "turn path confinement off (file tools may touch any path)")
	fs.Var((*listFlag)(&c.AllowRoots), "allow-root", "allow file tools under `DIR` too (repeatable)")
	fs.Var((*listFlag)(&c.ReadOnlyRoots), "read-only-root", "allow file tools to read under `DIR` (repeatable)")
	c.Policy.RegisterFlags(fs)
}

// Validate checks the flags' combinations.
func (c *Config) Validate() error {
	k := c.K8s
	if c.Backend != "k8s" && (k.Kubeconfig != "" || k.Context != "" || k.Namespace != "" || k.Pod != "" || k.AgentSandbox != "" || k.Container != "" || k.Image != "" || len(k.Mounts) > 0 || k.User != "") {
		return errors.New("open: --kubeconfig, --context, --namespace, --pod, --agent-sandbox, --k8s-container (and the K8s config) need --backend k8s")
	}
	switch c.Backend {
	case "", "local":
		if c.Docker.Image != "" || c.Docker.Container != "" || len(c.Docker.Mounts) > 0 || c.Docker.User != "" || c.Docker.Runtime != "" {
			return errors.New("open: --image, --container, --mount, --user and --runtime need --backend docker (--image, --mount, --user: or k8s)")
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
		return checkDocker(*c)
	case "ssh":
		if c.SSH.Host == "" {
			return errors.New("open: --backend ssh needs --host")
		}
	case "k8s":
		k := c.k8s()
		switch {
		case c.Docker.Container != "":
			return errors.New("open: --container is docker's; with --backend k8s use --pod NAME")
		case c.Docker.Runtime != "":
			return errors.New("open: --runtime is docker's; a k8s pod's runtime is its RuntimeClass")
		case c.SSH.Host != "" || c.SSH.Identity != "" || c.SSH.KnownHosts != "":
			return errors.New("open: --host, --identity and --known-hosts need --backend ssh")
		case btoi(k.Image != "")+btoi(k.Pod != "")+btoi(k.AgentSandbox != "") > 1:
			return errors.New("open: --image, --pod and --agent-sandbox are mutually exclusive")
		case k.Image == "" && k.Pod == "" && k.AgentSandbox == "":
			return errors.New("open: --backend k8s needs --image IMG, --pod NAME or --agent-sandbox NAME")
		case len(k.Mounts) > 0 && k.Image == "":
			return errors.New("open: --mount needs --image")
		case k.User != "" && k.Image == "":
			return errors.New("open: --user needs --image (pods/exec runs as the pod's user)")
		case k.Container != "" && k.Pod == "" && k.AgentSandbox == "":
			return errors.New("open: --k8s-container needs --pod or --agent-sandbox")
		}
		return checkK8s(*c)
	default:
		return fmt.Errorf("open: unknown backend %q (want local, docker, ssh or k8s)", c.Backend)
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }
