package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/docker"
	"github.com/pi-sandbox/pi-sandbox/ops/k8s"
	"github.com/pi-sandbox/pi-sandbox/ops/local"
	sshops "github.com/pi-sandbox/pi-sandbox/ops/ssh"
	"github.com/pi-sandbox/pi-sandbox/ops/ssh/sshtest"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
	"github.com/pi-sandbox/pi-sandbox/tools"
)

// benchLabel marks the containers this program creates.
const benchLabel = "pi-sandbox.bench"

// env is one open backend: raw (unconfined, for setup and fault checks),
// confined with the tools and the loop on top (what a program embedding
// pi-sandbox gets), and the flags that make `pi-sandbox tool` reach the same
// target.
type env struct {
	name string
	raw  ops.Backend
	sb   ops.Backend
	lp   *loop.Loop
	work string   // the working directory on the target
	cli  []string // backend flags for the CLI
	spec childSpec
	// docker
	container  string
	user       string
	dockerHost string // the engine's address when it is not the default one (podman)
	// k8s
	pod        string
	kubeconfig string
	kubectl    string
	// ssh
	sshd *sshtest.Server
	tb   *harnessTB

	closers []func()
}

func (e *env) close() {
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
	e.closers = nil
	if e.tb != nil {
		e.tb.close()
	}
}

// childSpec tells a child process how to open the same target.
type childSpec struct {
	Backend    string        `json:"backend"`
	WorkDir    string        `json:"workDir"`
	Container  string        `json:"container,omitempty"`
	User       string        `json:"user,omitempty"`
	SSH        sshops.Config `json:"ssh"`
	DockerHost string        `json:"dockerHost,omitempty"`
	Pod        string        `json:"pod,omitempty"`
	Kubeconfig string        `json:"kubeconfig,omitempty"`
	Shim       string        `json:"shim"`
	NoHelper   bool          `json:"noHelper,omitempty"`
}

// openEnv opens backend name; an error means the backend is skipped, with
// the error as the reason.
func openEnv(ctx context.Context, o *options, name string) (*env, error) {
	var (
		e   *env
		err error
	)
	switch name {
	case "local":
		e, err = openLocalEnv(ctx, o)
	case "docker":
		e, err = openDockerEnv(ctx, o, o.image, "", "")
	case "runsc":
		// The docker backend on gVisor: e.name stays "docker" (its
		// baselines are docker's); the report names it runsc.
		e, err = openDockerEnv(ctx, o, o.runscImage, "runsc", "")
	case "podman":
		// The docker backend on Podman's Docker-compatible service, with
		// the docker CLI (-H) as the baseline on the same container.
		host := os.Getenv("PI_SANDBOX_PODMAN_HOST")
		if host == "" {
			return nil, fmt.Errorf("PI_SANDBOX_PODMAN_HOST is not set (make podman starts Podman's service and prints it)")
		}
		e, err = openDockerEnv(ctx, o, o.podmanImage, "", host)
	case "ssh":
		e, err = openSSHEnv(ctx, o)
	case "k8s":
		e, err = openK8sEnv(ctx, o)
	default:
		return nil, fmt.Errorf("unknown backend %q", name)
	}
	if err != nil {
		if e != nil {
			e.close()
		}
		return nil, err
	}
	if err := e.wrap(ctx); err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

// wrap confines the raw backend as sandbox.OpenBackend does (working directory and
// spill directory) and builds the loop over tools.All.
func (e *env) wrap(ctx context.Context) error {
	var err error
	e.sb, e.lp, err = confinedLoop(ctx, e.raw)
	e.work = e.raw.Info().WorkDir
	return err
}

// confinedLoop confines raw to its working and spill directories and
// builds the loop over tools.All (a scenario's second session or its own
// container use it too).
func confinedLoop(ctx context.Context, raw ops.Backend) (ops.Backend, *loop.Loop, error) {
	info := raw.Info()
	roots := []sandbox.Root{{Path: info.WorkDir}}
	if info.SpillDir != "" {
		roots = append(roots, sandbox.Root{Path: info.SpillDir})
	}
	cb, err := sandbox.Confine(ctx, raw, roots)
	if err != nil {
		return nil, nil, err
	}
	lp, err := loop.New(tools.All(cb))
	return cb, lp, err
}

// openBackend opens a raw backend from a spec (used by children and by
// fault scenarios that need a second connection).
func openBackend(ctx context.Context, s childSpec) (ops.Backend, error) {
	switch s.Backend {
	case "local":
		return local.New(ctx, local.Config{WorkDir: s.WorkDir, ShimPath: s.Shim, NoHelper: s.NoHelper})
	case "docker":
		cli, err := engineClient(s.DockerHost)
		if err != nil {
			return nil, err
		}
		return docker.New(ctx, docker.Config{Client: cli, Container: s.Container, User: s.User, WorkDir: s.WorkDir, ShimBinary: s.Shim, NoHelper: s.NoHelper})
	case "ssh":
		c := s.SSH
		c.WorkDir = s.WorkDir
		c.ShimBinary = s.Shim
		c.NoHelper = s.NoHelper
		return sshops.New(ctx, c)
	case "k8s":
		return k8s.New(ctx, k8s.Config{Kubeconfig: s.Kubeconfig, Pod: s.Pod, WorkDir: s.WorkDir, ShimBinary: s.Shim, NoHelper: s.NoHelper})
	}
	return nil, fmt.Errorf("unknown backend %q", s.Backend)
}

func openLocalEnv(ctx context.Context, o *options) (*env, error) {
	dir, err := os.MkdirTemp("", "pibench-local-")
	if err != nil {
		return nil, err
	}
	e := &env{name: "local"}
	e.closers = append(e.closers, func() { os.RemoveAll(dir) })
	e.raw, err = local.New(ctx, local.Config{WorkDir: dir, ShimPath: o.shim})
	if err != nil {
		return e, err
	}
	e.closers = append(e.closers, func() { e.raw.Close() })
	e.cli = []string{"--backend", "local", "--workdir", dir}
	e.spec = childSpec{Backend: "local", WorkDir: dir, Shim: o.shim}
	return e, nil
}

// engineClient is a client of the engine at host; nil (the backend's own
// client of the environment's engine) when host is empty.
func engineClient(host string) (*client.Client, error) {
	if host == "" {
		return nil, nil
	}
	cli, err := client.New(client.FromEnv, client.WithHost(host))
	if err != nil {
		return nil, fmt.Errorf("engine client for %s: %w", host, err)
	}
	return cli, nil
}

func openDockerEnv(ctx context.Context, o *options, image, runtime, host string) (*env, error) {
	e := &env{name: "docker", dockerHost: host}
	cli, err := engineClient(host)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	b, err := docker.New(cctx, docker.Config{
		Client:     cli,
		Image:      image,
		Runtime:    runtime,
		Labels:     map[string]string{benchLabel: strconv.Itoa(os.Getpid())},
		ShimBinary: o.shim,
	})
	if err != nil {
		return nil, err
	}
	e.raw = b
	e.closers = append(e.closers, func() { b.Close() })
	if cli != nil {
		e.closers = append(e.closers, func() { cli.Close() })
	}
	info := b.Info()
	e.container = b.ID()
	e.user = fmt.Sprintf("%d:%d", info.UID, info.GID)
	if info.UID < 0 {
		e.user = docker.DefaultUser
	}
	e.cli = []string{"--backend", "docker", "--container", e.container, "--user", e.user, "--workdir", info.WorkDir}
	e.spec = childSpec{Backend: "docker", WorkDir: info.WorkDir, Container: e.container, User: e.user, DockerHost: host, Shim: o.shim}
	return e, nil
}

func openSSHEnv(ctx context.Context, o *options) (e *env, err error) {
	e = &env{name: "ssh", tb: &harnessTB{}}
	defer catch(&err)
	if sshtest.SSHDPath() == "" {
		return e, fmt.Errorf("sshd not installed (apt-get install openssh-server)")
	}
	s := sshtest.Start(e.tb)
	e.sshd = s
	work := s.TempDir(e.tb)
	cfg := s.Config()
	cfg.WorkDir = work
	cfg.ShimBinary = o.shim
	b, err := sshops.New(ctx, cfg)
	if err != nil {
		return e, err
	}
	e.raw = b
	e.closers = append(e.closers, func() { b.Close() })
	e.cli = []string{"--backend", "ssh", "--host", fmt.Sprintf("%s@%s", s.User, s.Addr()),
		"--identity", s.IdentityFile, "--known-hosts", s.KnownHostsFile, "--workdir", work}
	e.spec = childSpec{Backend: "ssh", WorkDir: work, SSH: s.Config(), Shim: o.shim}
	return e, nil
}

// sshArgs are the OpenSSH client's arguments for the test server, without
// a user config, agent or prompts: options, then the destination, then the
// remote command.
func (e *env) sshArgs(opts []string, remote ...string) []string {
	s := e.sshd
	a := []string{"-F", "/dev/null", "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes",
		"-i", s.IdentityFile, "-o", "UserKnownHostsFile=" + s.KnownHostsFile,
		"-o", "StrictHostKeyChecking=yes", "-p", strconv.Itoa(s.Port)}
	a = append(a, opts...)
	a = append(a, s.User+"@"+s.Host)
	return append(a, remote...)
}

// path joins elems under the working directory.
func (e *env) path(elems ...string) string {
	return path.Join(append([]string{e.work}, elems...)...)
}

// runOut runs command on the raw backend and returns its output.
func runOut(ctx context.Context, b ops.Backend, command string, timeout time.Duration) (string, error) {
	var sb strings.Builder
	err := b.Run(ctx, &ops.Cmd{Command: command, Output: &sb, Timeout: timeout})
	return sb.String(), err
}

// openK8sEnv makes an up pod (the image as the cluster's containerd knows
// it: make cluster imports the project's) on the cluster $KUBECONFIG names
// and opens the backend on it, as `pi-sandbox tool --backend k8s --pod`
// does. The pod is deleted at the end.
func openK8sEnv(ctx context.Context, o *options) (*env, error) {
	kc := os.Getenv("KUBECONFIG")
	if kc == "" {
		return nil, fmt.Errorf("KUBECONFIG is not set (make cluster prints a cluster's kubeconfig)")
	}
	e := &env{name: "k8s", kubeconfig: kc, kubectl: path.Join(path.Dir(kc), "bin", "kubectl")}
	if _, err := os.Stat(e.kubectl); err != nil {
		if e.kubectl, err = exec.LookPath("kubectl"); err != nil {
			return nil, fmt.Errorf("no kubectl for the baselines (next to the kubeconfig or in PATH)")
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cfg := k8s.Config{Kubeconfig: kc, Image: o.image, Labels: map[string]string{benchLabel: strconv.Itoa(os.Getpid())}, ShimBinary: o.shim}
	c, err := k8s.NewClient(cfg)
	if err != nil {
		return nil, err
	}
	name, err := k8s.Up(cctx, cfg)
	if err != nil {
		return nil, err
	}
	e.pod = name
	e.closers = append(e.closers, func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		k8s.Down(ctx, c, name)
	})
	b, err := k8s.New(cctx, k8s.Config{Kubeconfig: kc, Pod: name, ShimBinary: o.shim})
	if err != nil {
		return e, err
	}
	e.raw = b
	e.closers = append(e.closers, func() { b.Close() })
	work := b.Info().WorkDir
	e.cli = []string{"--backend", "k8s", "--kubeconfig", kc, "--pod", name, "--workdir", work}
	e.spec = childSpec{Backend: "k8s", WorkDir: work, Pod: name, Kubeconfig: kc, Shim: o.shim}
	return e, nil
}

// kubectlExec is `kubectl exec` into the bench pod.
func (e *env) kubectlExec(stdin bool, argv ...string) []string {
	a := []string{"--kubeconfig", e.kubeconfig, "exec"}
	if stdin {
		a = append(a, "-i")
	}
	return append(append(a, e.pod, "--"), argv...)
}
