package k8s

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/pi-sandbox/pi-sandbox/internal/spillkey"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/helper"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/execops"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/probecache"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/shellproc"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/target"
	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

var (
	_ ops.Backend       = (*Backend)(nil)
	_ ops.GrepFS        = (*Backend)(nil)
	_ ops.FindFS        = (*Backend)(nil)
	_ ops.LineCountFS   = (*Backend)(nil)
	_ ops.ReplaceFS     = (*Backend)(nil)
	_ ops.Confiner      = (*Backend)(nil)
	_ ops.ProcessLister = (*Backend)(nil)
)

// Backend runs tools in a pod through the in-target helper, or with
// NoHelper one exec per operation (ops/internal/execops).
type Backend struct {
	dispatcher

	h *helper.Client // the in-target helper; nil with NoHelper
	x *execops.Ops   // the exec-per-operation fallback

	c         *Client
	t         *podExec
	ephemeral bool   // we created the pod; Close deletes it
	up        bool   // a pod of `pi-sandbox up`: its helper daemon outlives this backend
	helperKey string // the up pod's helper key (AnnotationHelperKey)
	info      ops.Info
	env       []string
	stateDir  string // the sandbox's own directory in the pod (keyed)
	pidfile   string // this backend's helper's pid file
	shimPath  string
	sf        *shimFile
	oomProbe  string
	lease     time.Duration

	kept probecache.Kept // the probe kept on this host, for an up pod

	closeOnce sync.Once
	closeErr  error
}

// New opens a k8s backend: it creates an ephemeral hardened pod from
// cfg.Image and waits for it to run, or attaches to cfg.Pod, then probes
// the container in one exec, uploads the shim when it is not there yet and
// starts the helper. The probe of an up pod is kept on this host
// (probecache) for the pod's later clients, which then start with the
// relay's exec alone; a client that finds the kept probe wrong probes
// again.
func New(ctx context.Context, cfg Config) (*Backend, error) {
	return probecache.Open(func(reuse bool) (*Backend, *probecache.Kept, error) {
		b, err := open(ctx, cfg, reuse)
		if b == nil {
			return nil, nil, err
		}
		return b, &b.kept, err
	}, (*Backend).helperShim)
}

// helperShim is the shim a started helper runs from ("" without one).
func (b *Backend) helperShim() string {
	if b.h == nil {
		return ""
	}
	return b.shimPath
}

// open is New, with a kept probe allowed (reuse) or not; an error after
// the probe comes with the (closed) backend.
func open(ctx context.Context, cfg Config, reuse bool) (*Backend, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.Mounts = append([]Mount(nil), cfg.Mounts...)
	cfg.Env = append([]string(nil), cfg.Env...)
	// The helper binary is looked for before anything is created.
	sf, err := readShim(&cfg)
	if err != nil {
		return nil, err
	}
	c, err := NewClient(cfg)
	if err != nil {
		return nil, err
	}
	// The binary for this host's architecture until the probe says the
	// pod's (its node's).
	sf.choose(runtime.GOARCH)
	if cfg.AgentSandbox != "" {
		if cfg.Pod, err = SandboxPod(ctx, c, cfg.AgentSandbox); err != nil {
			return nil, err
		}
	}
	b := &Backend{c: c, lease: cfg.Lease, sf: sf}
	if b.lease == 0 {
		b.lease = DefaultLease
	}
	var limits []string
	if cfg.Image != "" {
		cfg.fillImageDefaults()
		name, inUserns, err := createPod(ctx, c, &cfg, KindEphemeral)
		if err != nil {
			return nil, err
		}
		b.t, b.ephemeral = &podExec{c: c, pod: name, container: ContainerName, protocol: cfg.Protocol}, true
		if !inUserns {
			limits = append(limits, "no user namespace (hostUsers: false is not supported by the node or disabled): uid 1000 in the pod is uid 1000 on the node")
		}
	} else {
		p, err := c.api.getPod(ctx, cfg.Pod)
		if err != nil {
			if apierrors.IsNotFound(err) {
				return nil, ops.ConfigError("k8s: no pod %q in namespace %s", cfg.Pod, c.Namespace)
			}
			return nil, apiErr("get pod", err)
		}
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			return nil, ops.ConfigError("k8s: pod %q is not running (%s)", cfg.Pod, podState(p))
		}
		ctr, err := pickContainer(p, cfg.Container)
		if err != nil {
			return nil, err
		}
		b.t = &podExec{c: c, pod: p.Name, container: ctr, protocol: cfg.Protocol}
		if p.Labels[LabelManaged] == "true" && p.Labels[LabelKind] == KindSandbox {
			b.up, b.helperKey = true, p.Annotations[AnnotationHelperKey]
			if started := containerStarted(p, ctr); started != "" && !cfg.NoHelper {
				b.kept.Use(reuse, "k8s", c.REST.Host, c.Namespace, p.Name, string(p.UID), ctr, started, cfg.WorkDir)
			}
		} else {
			limits = append(limits, "an existing pod is used as it is: the hardened profile is whatever it was started with")
		}
	}
	b.env = append(append([]string{}, baseEnv...), cfg.Env...)
	if err := b.probe(ctx, &cfg); err != nil {
		b.Close()
		return b, err
	}
	b.info.Limits = append(limits, b.info.Limits...)
	b.initOps()
	b.x.SetTarget(execops.Target{WorkDir: b.info.WorkDir, Shell: b.info.Shell, Env: b.env, RunDir: b.stateDir + "/run",
		Shim: func() string { return b.shimPath }, OOMProbe: b.oomProbe})
	if cfg.NoHelper || b.shimPath == "" {
		why := "disabled"
		if !cfg.NoHelper {
			why = "no shim in the container"
		}
		b.info.Limits = append(b.info.Limits, "no helper ("+why+"): each operation costs one exec")
		b.info.Capabilities = append(b.info.Capabilities, "grep", "find", "linecount")
		return b, nil
	}
	h, err := helper.New(ctx, helper.Config{
		Name:      "k8s",
		Dial:      b.dialHelper,
		Restore:   b.restoreHelper,
		Build:     b.sf.sum,
		Keepalive: keepalive,
		Hello:     proto.Hello{WorkDir: proto.Str(b.info.WorkDir), SpillDir: proto.Str(b.info.SpillDir), Shell: proto.Str(b.info.Shell), Env: proto.Strs(b.env), MaxBackground: cfg.MaxBackground, OOMCounter: true},
	})
	if err != nil {
		b.Close()
		return b, err
	}
	b.h = h
	for _, c := range h.Info().Capabilities {
		if !b.info.Has(c) {
			b.info.Capabilities = append(b.info.Capabilities, c)
		}
	}
	b.info.Limits = append(b.info.Limits, h.Info().Limits...)
	return b, nil
}

// containerStarted is when the pod's container ctr last started ("" when
// it is not running): a restart empties what the probe prepared.
func containerStarted(p *corev1.Pod, ctr string) string {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == ctr && cs.State.Running != nil {
			return cs.State.Running.StartedAt.UTC().Format(time.RFC3339Nano) + "/" + strconv.Itoa(int(cs.RestartCount))
		}
	}
	return ""
}

// pickContainer returns want, or the pod's only (or default) container.
func pickContainer(p *corev1.Pod, want string) (string, error) {
	var names []string
	for _, c := range p.Spec.Containers {
		names = append(names, c.Name)
		if c.Name == want {
			return want, nil
		}
	}
	switch {
	case want != "":
		return "", fmt.Errorf("k8s: pod %s has no container %q (it has %s)", p.Name, want, strings.Join(names, ", "))
	case len(names) == 1:
		return names[0], nil
	}
	if d := p.Annotations["kubectl.kubernetes.io/default-container"]; d != "" {
		return d, nil
	}
	return "", fmt.Errorf("k8s: pod %s has %d containers (%s): choose one (Container, --k8s-container)", p.Name, len(names), strings.Join(names, ", "))
}

// probeScript prints key=value lines about the container and prepares the
// sandbox's directory. $1 is the working directory ("" for the
// container's), $2 the state directory's name (keyed), $3 the shim's
// content-addressed file name, $4 the directory the pod keeps it in ("" for
// an existing pod).
const probeScript = `
echo "uid=$(id -u)"; echo "gid=$(id -g)"; echo "user=$(id -un 2>/dev/null)"
echo "home=$HOME"; echo "arch=$(uname -m)"; echo "os=$(uname -s)"
for s in /bin/bash /usr/bin/bash; do if [ -x "$s" ]; then echo "shell=$s"; break; fi; done
if [ -f /sys/fs/cgroup/memory.events ]; then echo oom=/sys/fs/cgroup/memory.events
elif [ -f /sys/fs/cgroup/memory/memory.oom_control ]; then echo oom=/sys/fs/cgroup/memory/memory.oom_control; fi
wd=$1; [ -n "$wd" ] || wd=$(pwd)
echo "workdir=$wd"
[ -d "$wd" ] && echo workdir_ok=1
[ -w "$wd" ] && echo workdir_w=1
st=
for base in ` + StateDir + ` /var/tmp /tmp "$HOME"; do
  if [ -d "$base" ] && [ -w "$base" ] && mkdir -p "$base/$2/spill" "$base/$2/run" 2>/dev/null; then
    chmod 700 "$base/$2" 2>/dev/null; st=$base/$2; break
  fi
done
[ -n "$st" ] && echo "state=$st" && echo "statefs=$(stat -f -c %T "$st" 2>/dev/null)"
# A HOME the user can write in a pod of our own ($5, its state directory):
# the image's when it is one, else the user's directory there (a uid the
# image does not list has HOME=/; the root file system is read-only).
if [ -n "$5" ] && ! { [ "$HOME" != / ] && [ -d "$HOME" ] && [ -w "$HOME" ]; }; then
  d=$5/home-$(id -u); mkdir -m 700 "$d" 2>/dev/null
  [ -d "$d" ] && [ ! -L "$d" ] && [ -O "$d" ] && [ -w "$d" ] && echo "sethome=$d"
fi
for d in $4 "${st%/*}"; do
  [ -n "$d" ] || continue
  if [ -x "$d/$3" ] && "$d/$3" __shim version >/dev/null 2>&1; then echo "shim=$d/$3"; break; fi
done
true
`

func (b *Backend) probe(ctx context.Context, cfg *Config) error {
	sf := b.sf
	shimDir := ""
	if b.ephemeral {
		shimDir = ShimDir
	}
	// The key: later backends on the same pod and working directory (other
	// processes too) find the same spill directory.
	sum := sha256.Sum256([]byte(b.t.c.Namespace + "\x00" + b.t.pod + "\x00" + b.t.container + "\x00" + cfg.WorkDir))
	stateName := "pi-sandbox-" + hex.EncodeToString(sum[:8])
	ours := ""
	if b.ephemeral || b.up {
		ours = StateDir
	}
	out, err := b.kept.Probe(func() ([]byte, error) {
		res, err := b.t.script(ctx, probeScript, nil, cfg.WorkDir, stateName, sf.name, shimDir, ours)
		if err != nil {
			return nil, fmt.Errorf("k8s: probe: %w", err)
		}
		if res.code != 0 {
			return nil, fmt.Errorf("k8s: probe failed (exit %d; the image needs /bin/sh): %s", res.code, strings.TrimSpace(string(res.stderr)))
		}
		return res.stdout, nil
	}, stateName, sf.name, shimDir, ours)
	if err != nil {
		return err
	}
	kv := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			kv[k] = v
		}
	}
	if h := kv["sethome"]; h != "" && !hasKey(cfg.Env, "HOME") {
		kv["home"] = h
		b.env = append(b.env, "HOME="+h)
	}
	choice := ""
	if b.ephemeral {
		choice = "--user UID:GID" // an existing pod's user is its own
	}
	info := ops.Info{
		Backend: "k8s",
		WorkDir: kv["workdir"],
		Home:    kv["home"],
		User:    kv["user"],
		UID:     atoiOr(kv["uid"], -1),
		GID:     atoiOr(kv["gid"], -1),
		OS:      strings.ToLower(kv["os"]),
		Arch:    target.GOARCH(kv["arch"]),
		Shell:   kv["shell"],

		UserChoice: choice,
	}
	if info.Shell == "" {
		info.Shell = "/bin/sh"
	}
	if info.Home == "" {
		info.Home = "/"
	}
	if kv["workdir_ok"] != "1" {
		return fmt.Errorf("k8s: working directory %s does not exist in the container", info.WorkDir)
	}
	if kv["workdir_w"] != "1" {
		info.Limits = append(info.Limits, "the working directory "+info.WorkDir+" is not writable for the sandbox user")
	}
	b.stateDir = kv["state"]
	if b.stateDir == "" {
		return fmt.Errorf("k8s: no writable directory for the sandbox's own files (%s, /var/tmp, /tmp, home)", StateDir)
	}
	if kv["statefs"] == "tmpfs" {
		info.Limits = append(info.Limits, "the spill directory is on a tmpfs (memory-backed)")
	}
	info.SpillDir = b.stateDir + "/spill"
	if b.up && strings.HasPrefix(b.stateDir, StateDir+"/") { // the up pod's emptyDir: it lasts
		info.CheckpointDir = b.stateDir + "/checkpoints/" + spillkey.Key("", info.WorkDir)
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	b.pidfile = b.stateDir + "/run/helper-" + hex.EncodeToString(rnd[:]) + ".pid"
	if f := kv["oom"]; f != "" {
		b.oomProbe = `while read k v; do [ "$k" = oom_kill ] && pv=$v; done < ` + shellproc.Quote(f)
	}
	b.info = info
	b.shimPath = kv["shim"]
	if sf.bins != nil && info.Arch != "" && info.Arch != sf.arch {
		// The node is not of the architecture guessed: its binary is
		// another one (the shim found, if any, is not it).
		b.shimPath = ""
		sf.choose(info.Arch)
	}
	if sf.err != nil {
		if b.ours() && !cfg.NoHelper {
			return b.oursErr(sf.full)
		}
		b.shimPath = ""
		b.info.Limits = append(b.info.Limits, noShimLimit+" ("+sf.err.Error()+")")
		return nil
	}
	if b.shimPath == "" {
		dir := shimDir
		owned := ""
		if dir == "" {
			dir = b.stateDir[:strings.LastIndexByte(b.stateDir, '/')]
			owned = "the shim " + dir + "/" + sf.name + " belongs to the sandbox user, who can replace it"
		}
		p, err := b.uploadShim(ctx, dir)
		switch {
		case err != nil && (errors.Is(err, ops.ErrTransport) || ctx.Err() != nil):
			return err
		case err != nil && b.ours() && !cfg.NoHelper:
			return b.oursErr(err)
		case err != nil:
			// An existing pod that cannot run the binary (no
			// exec-capable directory) gets the fallback.
			b.info.Limits = append(b.info.Limits, noShimLimit+" ("+err.Error()+")")
			return nil
		}
		b.shimPath = p
		if owned != "" {
			b.info.Limits = append(b.info.Limits, owned)
		}
	}
	b.info.Capabilities = append(b.info.Capabilities, "shim")
	return nil
}

// ours reports whether pi-sandbox created the pod (an ephemeral one, an
// up pod): it always runs the helper.
func (b *Backend) ours() bool { return b.ephemeral || b.up }

// oursErr is the refusal of a pod we created in which the helper cannot
// run.
func (b *Backend) oursErr(err error) error {
	return fmt.Errorf("k8s: the helper cannot run in pod %s, which pi-sandbox created, so the session is refused rather than run on the fallback (--no-helper, Go: NoHelper, asks for it): %w", b.t.pod, err)
}

// Info describes the pod's container.
func (b *Backend) Info() ops.Info {
	i := b.info
	i.Capabilities = append([]string(nil), i.Capabilities...)
	i.Limits = append([]string(nil), i.Limits...)
	return i
}

// Pod returns the pod's name and Namespace its namespace.
func (b *Backend) Pod() string       { return b.t.pod }
func (b *Backend) Namespace() string { return b.t.c.Namespace }

// Close ends the helper (it kills every command's tree) and deletes an
// ephemeral pod, returning once it is gone; in an existing pod the spill
// directory stays for later calls. It is safe to call twice.
func (b *Backend) Close() error {
	b.closeOnce.Do(func() {
		if b.h != nil {
			b.h.Close()
		}
		switch {
		case b.ephemeral && b.t != nil:
			b.closeErr = deletePod(b.c, b.t.pod, true)
		case b.up:
			// The daemon and its background processes stay until down.
		case b.pidfile != "" && b.shimPath != "":
			// Closing the stream ends the helper; make sure of it, since a
			// stream that was cut closes nothing in the pod.
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			res, err := b.t.script(ctx, `"$1" __shim kill --wait 5s "$2"; s=$?; [ $s = 2 ] && s=0; exit $s`, nil, b.shimPath, b.pidfile)
			cancel()
			if err == nil && res.code != 0 {
				err = fmt.Errorf("k8s: end the helper: exit %d: %s", res.code, strings.TrimSpace(string(res.stderr)))
			}
			b.closeErr = err
		}
	})
	return b.closeErr
}

func atoiOr(s string, def int) int {
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		return def
	}
	return n
}

// hasKey reports whether env sets key.
func hasKey(env []string, key string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, key+"=") {
			return true
		}
	}
	return false
}
