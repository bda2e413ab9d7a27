package k8s

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/target"
)

// Labels put on every pod this package creates, so ls, gc and leak checks
// find it.
const (
	// LabelManaged marks a pi-sandbox pod ("true").
	LabelManaged = "pi-sandbox.managed"
	// LabelKind is KindEphemeral or KindSandbox.
	LabelKind = "pi-sandbox.kind"
	// LabelHost and LabelPID record who created an ephemeral pod, so gc
	// can tell a leaked one (its process is gone) from one in use.
	LabelHost = "pi-sandbox.host"
	LabelPID  = "pi-sandbox.pid"
)

// AnnotationHelperKey holds an up pod's helper key: a random secret the
// clients read from the API server (processes in the pod cannot) and the
// pod's helper daemon must prove, so a process of the sandbox user
// listening on the daemon's socket in its place is never trusted.
const AnnotationHelperKey = "pi-sandbox.helper-key"

// Kinds of pod (the LabelKind value).
const (
	// KindEphemeral is deleted by Close; gc deletes it once the process
	// that created it is gone.
	KindEphemeral = "ephemeral"
	// KindSandbox comes from Up and stays until Down or gc --all.
	KindSandbox = "sandbox"
)

// Defaults of the hardened pod.
const (
	DefaultUser             = "1000:1000"
	DefaultWorkDir          = "/workspace"
	DefaultMemory           = 2 << 30
	DefaultCPUs             = 2.0
	DefaultEphemeralStorage = 8 << 30
	DefaultTmpSize          = 512 << 20
	DefaultPullPolicy       = "IfNotPresent"
	// DefaultLease is how long the helper outlives a client that vanished
	// without closing its stream (see the package doc).
	DefaultLease = 30 * time.Second
	// ContainerName is the container of the pods we create.
	ContainerName = "sandbox"
	// StateDir and ShimDir are emptyDirs of the pods we create: the
	// sandbox's own files (spill files, pid files) and the uploaded shim.
	StateDir = "/var/lib/pi-sandbox"
	ShimDir  = "/opt/pi-sandbox"
)

// keepalive is the helper client's ping period while idle (the lease is
// several of them).
const keepalive = 5 * time.Second

// Config configures a k8s backend. The zero value of every field except
// the image or pod is the hardened profile; each relaxation is a named
// field. New copies the struct before filling defaults.
type Config struct {
	// Kubeconfig is the kubeconfig file. Zero: $KUBECONFIG, then
	// ~/.kube/config (client-go's loading rules).
	Kubeconfig string
	// Context is the kubeconfig context. Zero: its current context.
	Context string
	// Namespace of the pod. Zero: the context's namespace, else "default".
	Namespace string
	// REST, when set, is used instead of the kubeconfig (tests, programs
	// with their own client configuration). Namespace then defaults to
	// "default".
	REST *rest.Config

	// Image runs an ephemeral hardened pod from this image; Close deletes
	// it. Exactly one of Image and Pod must be set.
	Image string
	// Pod uses an existing running pod as it is: no profile is applied and
	// Close removes only what the backend started in it.
	Pod string
	// AgentSandbox uses the pod of an existing agent-sandbox Sandbox of
	// that name (kubernetes-sigs/agent-sandbox), as Pod does; it excludes
	// Image and Pod.
	AgentSandbox string
	// Container is the container of a multi-container Pod. Zero: the
	// pod's only container, or the one named by the
	// kubectl.kubernetes.io/default-container annotation.
	Container string

	// WorkDir is the working directory in the container. Zero: /workspace
	// for Image (an emptyDir unless a mount covers it); for Pod, the
	// container's working directory (its workingDir, else the image's), as
	// the docker backend does for an existing container.
	WorkDir string
	// User is "UID:GID" for the pod's container (runAsUser, runAsGroup).
	// Zero: the owner (uid:gid) of the first mount's source when this host
	// can stat it (the node is this host) and it is not root's, else
	// 1000:1000. Only with Image: pods/exec runs as the container's user.
	User string
	// Mounts are hostPath volumes of an Image pod (for single-node
	// development clusters: the path is on the node).
	Mounts []Mount
	// Note, when set, receives what the person who opens the sandbox
	// should know about its configuration (a root-owned mount the default
	// user cannot write to, and what to do).
	Note func(string)
	// Labels are added to the pods we create (a per-run label in tests);
	// the managed labels are always set.
	Labels map[string]string
	// Env holds KEY=VALUE entries for every command, on top of the
	// container's environment and the non-interactive defaults.
	Env []string
	// ImagePullPolicy is Always, IfNotPresent or Never. Zero: IfNotPresent.
	ImagePullPolicy string

	// Memory is the memory limit in bytes. Zero: 2 GiB. Negative: none.
	Memory int64
	// CPUs is the CPU limit. Zero: 2. Negative: none.
	CPUs float64
	// EphemeralStorage limits the pod's disk (the emptyDirs and the
	// container's logs). Zero: 8 GiB. Negative: none.
	EphemeralStorage int64
	// TmpSize is the size of the memory-backed /tmp. Zero: 512 MiB.
	TmpSize int64
	// MaxLifetime, when set, is the pod's activeDeadlineSeconds: the
	// cluster ends it after that long even if no client deletes it.
	MaxLifetime time.Duration

	// WritableRootfs leaves the root file system writable. Zero: read-only.
	WritableRootfs bool
	// AllowPrivilegeEscalation drops allowPrivilegeEscalation: false.
	AllowPrivilegeEscalation bool
	// CapAdd lists capabilities kept despite dropping ALL.
	CapAdd []string
	// AllowRoot drops runAsNonRoot (needed for a User with uid 0).
	AllowRoot bool
	// SeccompUnconfined drops the RuntimeDefault seccomp profile.
	SeccompUnconfined bool
	// NoUserNamespace never asks for hostUsers: false. Zero: ask where the
	// node supports user namespaces.
	NoUserNamespace bool
	// ServiceAccountToken mounts the service account's token. Zero: none.
	ServiceAccountToken bool
	// RuntimeClassName selects a RuntimeClass (gVisor, Kata) for the pod.
	RuntimeClassName string

	// ShimBinary is the host path of the static helper binary
	// (pi-sandbox-shim) to upload; a node of another architecture gets
	// pi-sandbox-shim-linux-GOARCH from beside it (shim.Binaries). Zero:
	// shim.HostBinary(). Without a usable one New fails with a
	// *shim.BinaryError unless NoHelper is set.
	ShimBinary string
	// NoHelper asks for the fallback path: every operation is its own exec
	// (ops/internal/execops) instead of a request to the long-lived
	// helper, and the helper binary is not required. Commands still run
	// under the shim when it is there; without it a process that calls
	// setsid itself survives a kill, and Info.Limits says so. Zero: the
	// helper. A pod we create (Image, up) always runs it: where it
	// cannot, New fails naming the cause; an existing pod that cannot run
	// it (an architecture without a binary, no exec-capable directory)
	// uses the fallback and Info.Limits says why.
	NoHelper bool
	// MaxBackground bounds the background process groups the helper owns
	// (zero: 64).
	MaxBackground int
	// Lease is how long a helper outlives a vanished client. Zero:
	// DefaultLease. At least 15 s (three pings).
	Lease time.Duration
	// StartTimeout bounds the wait for a created pod to run. Zero: 2 min.
	StartTimeout time.Duration

	// Protocol restricts exec to "websocket" or "spdy". Zero: WebSocket
	// with the SPDY fallback, as kubectl.
	Protocol string
}

// Mount is a hostPath volume.
type Mount struct {
	Source   string // path on the node
	Target   string // absolute path in the container
	ReadOnly bool
}

// ParseMount parses HOST:TARGET[:ro].
func ParseMount(s string) (Mount, error) {
	src, dst, ro, err := target.ParseMount(s)
	if err != nil {
		return Mount{}, fmt.Errorf("k8s: %w", err)
	}
	return Mount{Source: src, Target: dst, ReadOnly: ro}, nil
}

// Errors from New for a bad configuration.
var (
	ErrNoTarget       = errors.New("k8s: config needs Image or Pod")
	ErrImageAndPod    = errors.New("k8s: config has both Image and Pod")
	errPodOnlyOptions = "k8s: %s needs Image (an existing pod is used as it is)"
)

func (c *Config) validate() error {
	if c.AgentSandbox != "" {
		if c.Image != "" || c.Pod != "" {
			return ops.ConfigError("k8s: AgentSandbox names the target: no Image or Pod with it")
		}
		cc := *c
		cc.Pod, cc.AgentSandbox = cc.AgentSandbox, ""
		return cc.validate()
	}
	switch {
	case c.Image == "" && c.Pod == "":
		return ErrNoTarget
	case c.Image != "" && c.Pod != "":
		return ErrImageAndPod
	}
	if c.Pod == "" && c.Container != "" {
		return errors.New("k8s: Container needs Pod (an Image pod has one container)")
	}
	if c.Pod != "" {
		for name, set := range map[string]bool{
			"User (pods/exec runs as the container's user)": c.User != "",
			"Mounts":           len(c.Mounts) > 0,
			"ImagePullPolicy":  c.ImagePullPolicy != "",
			"RuntimeClassName": c.RuntimeClassName != "",
			"MaxLifetime":      c.MaxLifetime != 0,
		} {
			if set {
				return fmt.Errorf(errPodOnlyOptions, name)
			}
		}
	}
	switch c.ImagePullPolicy {
	case "", "Always", "IfNotPresent", "Never":
	default:
		return fmt.Errorf("k8s: ImagePullPolicy %q (want Always, IfNotPresent or Never)", c.ImagePullPolicy)
	}
	switch c.Protocol {
	case "", "websocket", "spdy":
	default:
		return fmt.Errorf("k8s: Protocol %q (want websocket or spdy)", c.Protocol)
	}
	if c.WorkDir != "" && (!path.IsAbs(c.WorkDir) || path.Clean(c.WorkDir) != c.WorkDir) {
		return fmt.Errorf("k8s: WorkDir %q is not an absolute clean path", c.WorkDir)
	}
	if c.User != "" {
		uid, _, err := parseUser(c.User)
		if err != nil {
			return err
		}
		if uid == 0 && !c.AllowRoot {
			return ops.ConfigError("k8s: User with uid 0 needs AllowRoot")
		}
	}
	if c.Lease != 0 && c.Lease < 3*keepalive {
		return fmt.Errorf("k8s: Lease %s is shorter than %s (three pings)", c.Lease, 3*keepalive)
	}
	for _, kv := range c.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("k8s: bad Env entry %q", kv)
		}
	}
	return nil
}

// parseUser parses "UID:GID" (numbers: a pod cannot name a user).
func parseUser(s string) (uid, gid int64, err error) {
	u, g, ok := strings.Cut(s, ":")
	if !ok {
		g = u
	}
	uid, err1 := strconv.ParseInt(u, 10, 64)
	gid, err2 := strconv.ParseInt(g, 10, 64)
	if err1 != nil || err2 != nil || uid < 0 || gid < 0 {
		return 0, 0, ops.ConfigError("k8s: User %q: want numeric UID[:GID] (a pod cannot name a user)", s)
	}
	return uid, gid, nil
}

// fillImageDefaults applies the hardened profile's zero-value defaults.
func (c *Config) fillImageDefaults() {
	if c.User == "" {
		c.User = DefaultUser
		if len(c.Mounts) > 0 {
			c.User = target.MountUser(c.Mounts[0].Source, DefaultUser, c.Note)
		}
	}
	if c.WorkDir == "" {
		c.WorkDir = DefaultWorkDir
	}
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = DefaultPullPolicy
	}
	c.Memory = target.Limit(c.Memory, DefaultMemory)
	c.CPUs = target.Limit(c.CPUs, DefaultCPUs)
	c.EphemeralStorage = target.Limit(c.EphemeralStorage, DefaultEphemeralStorage)
	if c.TmpSize <= 0 {
		c.TmpSize = DefaultTmpSize
	}
}

// baseEnv is what every command gets before Config.Env and Cmd.Env.
var baseEnv = ops.NonInteractiveEnv()

// CheckUser checks the syntax of a pod's User: numeric UID[:GID].
func CheckUser(s string) error {
	_, _, err := parseUser(s)
	return err
}
