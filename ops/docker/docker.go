package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/internal/spillkey"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/helper"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/execops"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/probecache"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/shellproc"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/target"
)

var _ ops.Backend = (*Backend)(nil)

// Backend runs tools in a container through the Engine API.
type Backend struct {
	cli       *client.Client
	closeCli  func()
	id        string // container id
	ephemeral bool   // we created the container; Close removes it
	remove    bool   // Config.RemoveOnClose: Close removes the container
	up        bool   // an `up` sandbox: one long-lived helper daemon serves every client
	helperKey string // the up sandbox's helper key (LabelHelperKey), "" without
	startedAt string // the container's State.StartedAt when opened: a change is a restart
	mu        sync.Mutex
	exposed   bool // a relay was dumpable at its start: the key was not sent
	// hostSock is the host path of an up sandbox's daemon socket
	// (hostsock.go; "" without one), hostPidNS the container's pid
	// namespace, hostSockErr why its peer was not trusted.
	hostSock, hostPidNS, hostSockErr string
	user                             string // exec user ("" = the container's)
	env                              []string
	info                             ops.Info
	stateDir                         string // the sandbox's own directory in the container
	runDir                           string // per-call pid files
	shimPath                         string // the shim in the container, "" without
	// helperMounted: the container is ours and has the host's helper
	// cache mounted at helperDir.
	helperMounted bool
	// readableShim: root installs the shim readable (0755), not
	// execute-only: the sandbox user could not run it (unsealShim).
	readableShim bool
	oomProbe     string // shellproc.Spec.Probe reading the oom_kill counter
	oomFile      string
	h            *helper.Client // the in-target helper; nil: the scripts serve
	x            *execops.Ops   // the scripts: one exec per operation
	dispatcher
	sf   *shimFile       // the host's shim binary, for a re-upload
	kept probecache.Kept // the probe kept on this host, for an up sandbox

	closeOnce sync.Once
	closeErr  error
	closing   atomic.Bool // Close has begun: a helper's end is the container's (holdContainer)
}

// New opens a docker backend: it creates and starts an ephemeral hardened
// container from cfg.Image, or attaches to cfg.Container, then probes the
// target (user, home, shell, architecture, cgroup) in one exec and prepares
// the sandbox's own directory and the shim. The probe of an up sandbox is
// kept on this host (probecache) for the sandbox's later clients, which
// then start with the relay's exec alone; a client that finds the kept
// probe wrong probes again.
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

// open is New, with a kept probe allowed (reuse) or not; an error of the
// probe comes with the (closed) backend.
func open(ctx context.Context, cfg Config, reuse bool) (*Backend, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.Labels = cloneMap(cfg.Labels)
	cfg.Mounts = append([]Mount(nil), cfg.Mounts...)
	cfg.Env = append([]string(nil), cfg.Env...)
	// The helper binary is looked for before anything is created.
	sf, err := readShim(&cfg)
	if err != nil {
		return nil, err
	}
	cli, closeCli, err := cfg.client()
	if err != nil {
		return nil, err
	}
	cfg.shim = sf // createContainer chooses the binary for the image
	b := &Backend{cli: cli, closeCli: closeCli, sf: sf}
	b.initOps()
	if _, err := Ping(ctx, cli); err != nil {
		closeCli()
		return nil, err
	}
	if cfg.Image != "" {
		cfg.fillImageDefaults()
		id, err := createContainer(ctx, cli, &cfg, "ephemeral")
		if err != nil {
			closeCli()
			return nil, err
		}
		b.id, b.ephemeral, b.user = id, true, cfg.User
		b.helperMounted = cfg.helper.mounted
		if res, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); err == nil && res.Container.State != nil {
			b.startedAt = res.Container.State.StartedAt
		}
	} else {
		res, err := cli.ContainerInspect(ctx, cfg.Container, client.ContainerInspectOptions{})
		if err != nil {
			closeCli()
			if cerrdefs.IsNotFound(err) {
				return nil, notFound(cfg.Container)
			}
			return nil, transportErr("container inspect", err)
		}
		if st := res.Container.State; st == nil || !st.Running || st.Paused {
			closeCli()
			state := "unknown state"
			if st != nil {
				state = string(st.Status)
			}
			return nil, stateErr(cfg.Container, state)
		}
		b.id, b.user, b.startedAt = res.Container.ID, cfg.User, res.Container.State.StartedAt
		b.remove = cfg.RemoveOnClose
		// The binary for this host's architecture until the probe says
		// the container's (a miss is chosen again then).
		sf.choose(runtime.GOARCH)
		if c := res.Container.Config; c != nil && c.Labels[LabelManaged] == "true" {
			// One of ours (up, a pool member, another process's
			// ephemeral one) may have the host's helper cache mounted.
			b.helperMounted = refreshMounted(mountedHelper(res.Container.Mounts), sf)
		}
		if c := res.Container.Config; c != nil && c.Labels[LabelManaged] == "true" && c.Labels[LabelKind] == KindSandbox {
			b.up, b.helperKey = true, c.Labels[LabelHelperKey]
			b.hostSock, b.hostPidNS = hostSockOf(res.Container)
			if b.helperKey != "" && !cfg.NoHelper {
				b.kept.Use(reuse, "docker", cli.DaemonHost(), b.id, b.startedAt, cfg.User, cfg.WorkDir)
			}
			if v, ok := c.Labels[LabelMaxSavedOutput]; ok && cfg.MaxSavedOutput == 0 {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					closeCli()
					return nil, fmt.Errorf("docker: container %q: label %s=%q is not a number of bytes", cfg.Container, LabelMaxSavedOutput, v)
				}
				cfg.MaxSavedOutput = n
			}
		}
		if cfg.WorkDir == "" && res.Container.Config != nil {
			cfg.WorkDir = res.Container.Config.WorkingDir
		}
		if cfg.WorkDir == "" {
			cfg.WorkDir = "/"
		}
	}
	b.env = append(append([]string{}, baseEnv...), cfg.Env...)
	if err := b.probe(ctx, &cfg); err != nil {
		b.Close()
		return b, err
	}
	return b, nil
}

// probeScript prints key=value lines about the target and prepares the
// sandbox directory. $1 is the working directory, $2 the preferred state
// directory (empty for a foreign container), $3 a random suffix, $4 the
// shim's content-addressed file name (empty without a shim): an upload
// from an earlier sandbox in this container is reused. $5 "up": the
// sandbox directory is the one every client of an `up` sandbox shares
// (up-UID, mode 0700: the helper daemon's socket, spill files and
// background logs stay there until down), else a fresh one per client.
// $6 the spill key (empty for an ephemeral container, whose spill
// directory is its own). $7, when set, the helper's arguments after the
// binary ("@dir" for its directory in the sandbox directory): the exec goes
// on as the helper when the shim is there (probeServe). $8, when set, is the
// read-only mount of the host's helper binaries in a container of ours
// (helperDir): the shim is taken from there first.
var probeScript = spillkey.Script + `
# Few processes: each one costs milliseconds in a container. The ids come
# from the kernel (the effective ones, as id prints), the name from
# /etc/passwd, else id.
me=; gid=; user=
while read -r k r e x; do case $k in Uid:) me=$e;; Gid:) gid=$e;; esac; done 2>/dev/null </proc/self/status
[ -n "$me" ] || me=$(id -u); [ -n "$gid" ] || gid=$(id -g)
while IFS=: read -r n x i x; do [ "$i" = "$me" ] && { user=$n; break; }; done 2>/dev/null </etc/passwd
[ -n "$user" ] || user=$(id -un 2>/dev/null)
un=$(uname -sm)
# A state volume the user cannot write to has a directory of the user's
# (ownStateDir).
[ -n "$2" ] && [ ! -w "$2" ] && [ -d "$2/user-$me" ] && [ -O "$2/user-$me" ] && set -- "$1" "$2/user-$me" "$3" "$4" "$5" "$6" "$7" "$8"
echo "uid=$me"; echo "gid=$gid"; echo "user=$user"
echo "home=$HOME"; echo "arch=${un##* }"; echo "os=${un%% *}"
for s in /bin/bash /usr/bin/bash; do if [ -x "$s" ]; then echo "shell=$s"; break; fi; done
if [ -f /sys/fs/cgroup/memory.events ]; then echo oom=/sys/fs/cgroup/memory.events
elif [ -f /sys/fs/cgroup/memory/memory.oom_control ]; then echo oom=/sys/fs/cgroup/memory/memory.oom_control; fi
[ -d "$1" ] && echo workdir=ok
[ -w "$1" ] && echo workdir_w=ok
st=
own() { [ -d "$1" ] && [ ! -L "$1" ] && [ -O "$1" ] && chmod 700 "$1" 2>/dev/null; }
if [ "$5" = up ]; then
  for base in "$2" /var/tmp /tmp "$HOME"; do
    [ -n "$base" ] || continue
    d=$base/pi-sandbox-up-$me; [ "$base" = "$2" ] && d=$base/up-$me
    mkdir -m 700 "$d" 2>/dev/null; if own "$d"; then st=$d; break; fi
  done
elif [ -n "$2" ] && mkdir -p "$2/sb-$3" 2>/dev/null; then st=$2/sb-$3
else
  for base in /var/tmp /tmp "$HOME"; do
    if [ -d "$base" ] && [ -w "$base" ] && mkdir -m 700 "$base/pi-sandbox-$3" 2>/dev/null; then st=$base/pi-sandbox-$3; break; fi
  done
fi
if [ -n "$st" ] && mkdir -p "$st/spill" "$st/run"; then
  echo "state=$st"
  fs=$(stat -f -c %T "$st" 2>/dev/null); echo "statefs=$fs"
fi
# A HOME the user can write, for a sandbox of our own: the image's when it
# is one, else a directory of the user's in the state volume (a uid the
# image does not list has HOME=/; the root file system is read-only).
if [ -n "$2" ] && ! { [ "$HOME" != / ] && [ -d "$HOME" ] && [ -w "$HOME" ]; }; then
  for base in "$2" /var/tmp /tmp; do
    d=$base/pi-sandbox-home-$me; [ "$base" = "$2" ] && d=$base/home-$me
    mkdir -m 700 "$d" 2>/dev/null; if own "$d"; then echo "sethome=$d"; break; fi
  done
fi
# The spill directory of an existing container outlives the call, keyed by
# the working directory ($6, spillkey).
# An up sandbox's keyed spill directories are in its up directory.
if [ -n "$6" ]; then
  if [ "$5" = up ] && [ -n "$st" ]; then bases=$st; else bases="` + DefaultStateDir + ` /var/tmp /tmp"; fi
  for base in $bases "$HOME"; do
    if [ -d "$base" ] && [ -w "$base" ] && sp=$(spill_dir "$base" "$6"); then echo "spill=$sp"; break; fi
  done
fi
# The host's binary, mounted read-only by the engine ($8), or else a shim
# uploaded by root: in a root-owned directory of /tmp (sticky), so the
# sandbox user can neither replace nor move it, and execute-only.
if [ -n "$4" ] && [ -n "$8" ] && [ -x "$8/$4" ] && { [ -n "$7" ] || "$8/$4" __shim version >/dev/null 2>&1; }; then
  echo "shim=$8/$4"; shim=$8/$4
elif [ -n "$4" ]; then
  for d in /tmp/pi-sandbox-bin.*; do
    sp=$d/$4
    # (or readable, where the runtime cannot run an execute-only binary).
    case $(stat -c %u:%a "$d" "$sp" 2>/dev/null) in "0:755
0:711"|"0:755
0:755") ;; *) continue ;; esac
    # A helper about to start from it needs no check first: one that will
    # not serve is uploaded again (the client's Restore).
    if [ -n "$7" ] || "$sp" __shim version >/dev/null 2>&1; then echo "shim=$sp"; shim=$sp; break; fi
  done
fi
if [ -n "$7" ]; then
  if [ -n "$shim" ] && [ -n "$st" ]; then
    # The helper's arguments, "@dir" standing for its directory.
    set -f; set -- $7; set +f
    for w do shift; [ "$w" = @dir ] && w=$st/helper; set -- "$@" "$w"; done
    echo ` + helper.ServeMarker + `; exec "$shim" "$@"
  fi
  echo ` + helper.ProbeDoneMarker + `
fi
true
`

func (b *Backend) probe(ctx context.Context, cfg *Config) error {
	var rnd [6]byte
	rand.Read(rnd[:])
	suffix := hex.EncodeToString(rnd[:])
	stateBase, mode := "", ""
	if b.ephemeral || b.up {
		stateBase = DefaultStateDir
	}
	if b.up {
		mode = "up"
	}
	sf := b.sf
	// The spill directory of an existing container is keyed by the
	// working directory (an up sandbox's under its up directory, until
	// down); an ephemeral container's is its own.
	key := ""
	if !b.ephemeral {
		key = spillkey.Key("docker:"+b.id, cfg.WorkDir)
	}
	// Where the helper will serve a sandbox of its own, the probe's exec
	// becomes it (one exec for the session's start instead of two). Not a
	// keyed relay: the probe's shell held the exec's stdin first, open to
	// every process of the user, and the key would travel through it.
	serve := ""
	if !cfg.NoHelper && sf.err == nil && sf.name != "" && !(b.up && b.helperKey != "") {
		serve = strings.Join(b.helperArgs("@dir"), " ")
	}
	mounted := ""
	if b.helperMounted {
		mounted = helperDir
	}
	args := []string{cfg.WorkDir, stateBase, suffix, sf.name, mode, key, serve, mounted}
	for i, a := range args {
		args[i] = shellproc.Quote(a)
	}
	script := "set -- " + strings.Join(args, " ") + "\n" + probeScript
	var out []byte
	var open io.ReadWriteCloser // the probe's exec gone on as the helper
	if serve != "" {
		o, s, err := b.probeServe(ctx, script)
		if err != nil {
			if uerr := b.userRefused(o); uerr != nil {
				return uerr
			}
			return fmt.Errorf("docker: probe: %w", err)
		}
		out = o
		if s != nil {
			open = s
			defer func() {
				if open != nil { // an error before the helper's start
					open.Close()
				}
			}()
		}
	} else {
		var err error
		out, err = b.kept.Probe(func() ([]byte, error) {
			res, err := b.script(ctx, script, nil)
			if err != nil {
				return nil, fmt.Errorf("docker: probe: %w", err)
			}
			if res.code != 0 {
				if uerr := b.userRefused(res.stdout); uerr != nil {
					return nil, uerr
				}
				return nil, fmt.Errorf("docker: probe failed (exit %d): %s", res.code, strings.TrimSpace(res.stderr))
			}
			return res.stdout, nil
		}, stateBase, sf.name, mode, key, mounted)
		if err != nil {
			return err
		}
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
	info := ops.Info{
		Backend: "docker",
		WorkDir: cfg.WorkDir,
		Home:    kv["home"],
		User:    kv["user"],
		UID:     atoiOr(kv["uid"], -1),
		GID:     atoiOr(kv["gid"], -1),
		OS:      strings.ToLower(kv["os"]),
		Arch:    goarch(kv["arch"]),
		Shell:   kv["shell"],
		// The exec user (Config.User) picks it.
		UserChoice: "--user UID:GID",
		// Grep and Find run in the container (search.go); CountLines runs
		// wc -l there.
		Capabilities: []string{"grep", "find", "linecount"},

		SavedOutputTotal: cfg.MaxSavedOutput,
	}
	if info.Shell == "" {
		info.Shell = "/bin/sh"
	}
	if info.Home == "" {
		info.Home = "/"
	}
	if !b.ephemeral && !b.up {
		info.Limits = append(info.Limits, "an existing container is used as it is: the hardened profile is whatever it was started with")
	}
	if kv["workdir"] != "ok" {
		return fmt.Errorf("docker: working directory %s does not exist in the container", cfg.WorkDir)
	}
	if kv["workdir_w"] != "ok" {
		info.Limits = append(info.Limits, "the working directory "+cfg.WorkDir+" is not writable for the sandbox user")
	}
	b.stateDir = kv["state"]
	if b.stateDir == "" {
		return fmt.Errorf("docker: no writable directory for the sandbox's own files (/var/tmp, /tmp, home)")
	}
	if kv["statefs"] == "tmpfs" {
		info.Limits = append(info.Limits, "the spill directory is on a tmpfs (memory-backed)")
	}
	b.runDir = b.stateDir + "/run"
	if b.up && strings.HasPrefix(b.stateDir, DefaultStateDir+"/") { // the up volume: it lasts
		info.CheckpointDir = b.stateDir + "/checkpoints/" + spillkey.Key("", info.WorkDir)
	}
	switch {
	case kv["spill"] != "":
		info.SpillDir = kv["spill"]
	case b.ephemeral:
		info.SpillDir = b.stateDir + "/spill"
		info.Limits = append(info.Limits, "the spill directory is the ephemeral container's: full outputs go with it")
	default:
		info.SpillDir = b.stateDir + "/spill"
		info.Limits = append(info.Limits, "no private spill directory (0700, the sandbox user's) could be made: full outputs are removed with this sandbox")
	}
	if f := kv["oom"]; f != "" {
		b.oomFile = f
		b.oomProbe = `while read k v; do [ "$k" = oom_kill ] && pv=$v; done < ` + shellproc.Quote(f)
	} else {
		info.Limits = append(info.Limits, "no cgroup oom_kill counter: an out-of-memory kill is reported as a plain signal death")
	}
	b.info = info
	b.x.SetTarget(execops.Target{WorkDir: info.WorkDir, Shell: info.Shell, Env: b.env, RunDir: b.runDir, Shim: func() string { return b.shimPath }, OOMProbe: b.oomProbe})
	found := kv["shim"]
	if sf.bins != nil && info.Arch != "" && info.Arch != sf.arch {
		// The container is not of the architecture guessed: its binary
		// is another one (the shim found, if any, is not it).
		sf.choose(info.Arch)
		found = ""
	}
	if err := b.setupShim(ctx, sf, found, cfg.NoHelper); err != nil {
		return err
	}
	err := b.startHelper(ctx, cfg, open)
	open = nil
	return err
}

// Info describes the container.
func (b *Backend) Info() ops.Info {
	i := b.info
	i.Capabilities = append([]string(nil), i.Capabilities...)
	i.Limits = append([]string(nil), i.Limits...)
	return i
}

// ID returns the container's id.
func (b *Backend) ID() string { return b.id }

// Close removes the ephemeral container (with Config.RemoveOnClose the
// existing one too) with its volumes, or else the sandbox's own directory
// in an existing container (not in an `up` sandbox, whose directory and
// helper daemon stay until down). It is safe to call twice.
func (b *Backend) Close() error {
	b.closeOnce.Do(func() {
		b.closing.Store(true)
		// An up sandbox's directory is shared by its clients and its
		// daemon: it goes with the container (down).
		own := !b.ephemeral && !b.up && b.stateDir != ""
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if b.h != nil {
			if own && b.h.End(ctx, b.stateDir) == nil {
				own = false // the helper removed it, no exec needed
			}
			b.h.Close()
		}
		if b.ephemeral || b.remove {
			b.closeErr = removeContainer(b.cli, b.id)
		} else if own {
			res, err := b.script(ctx, "rm -rf "+shellproc.Quote(b.stateDir), nil)
			if err == nil && res.code != 0 {
				err = fmt.Errorf("docker: remove %s: %s", b.stateDir, res.failure())
			}
			b.closeErr = err
		}
		b.closeCli()
	})
	return b.closeErr
}

// engineErr wraps a failed engine call. A container that is gone or no
// longer running is reported as such.
func (b *Backend) engineErr(what string, err error) error {
	if cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err) {
		return fmt.Errorf("docker: %s: container %.12s: %w: %w", what, b.id, ops.ErrTransport, err)
	}
	return transportErr(what, err)
}

// goneErr reports a container that stopped under a call.
func (b *Backend) goneErr(cause error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	state := "unknown state"
	if res, err := b.cli.ContainerInspect(ctx, b.id, client.ContainerInspectOptions{}); err != nil {
		state = err.Error()
	} else if s := res.Container.State; s != nil {
		state = string(s.Status)
		if !s.Running {
			state += ", exit code " + strconv.Itoa(s.ExitCode)
		}
		if s.OOMKilled {
			state += ", out of memory"
		}
	}
	return fmt.Errorf("docker: container %.12s (%s): %w: %w", b.id, state, ops.ErrTransport, cause)
}

func (b *Backend) containerRunning(ctx context.Context) bool {
	res, err := b.cli.ContainerInspect(ctx, b.id, client.ContainerInspectOptions{})
	return err == nil && res.Container.State != nil && res.Container.State.Running && !res.Container.State.Paused
}

func atoiOr(s string, def int) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return def
	}
	return n
}

func goarch(m string) string { return target.GOARCH(m) }

// hasKey reports whether env sets key.
func hasKey(env []string, key string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, key+"=") {
			return true
		}
	}
	return false
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
