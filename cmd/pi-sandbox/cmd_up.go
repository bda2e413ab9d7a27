package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/docker"
	"github.com/pi-sandbox/pi-sandbox/ops/savedout"
)

func init() {
	register("up", &command{summary: "start a long-lived hardened sandbox container (or pod) and print its id (name)", run: runUp})
}

// runUp is `pi-sandbox up [flags]`: the container stays until `down` (or
// `gc --all`); use it with --backend docker --container ID. Its CLI calls
// share one long-lived helper (started by the first), so what a call leaves
// running in the background lives until down.
func runUp(ctx context.Context, args []string, io stdio) int {
	f := newFlagSet("up", "[flags]", io)
	f.about = "Starts a long-lived hardened sandbox and prints its id (a pod's name with --backend k8s)\nalone on stdout. The sandbox stays until pi-sandbox down ID; use it with --container ID\n(k8s: --pod NAME). Its calls share one helper: background processes a call leaves running\nlive until down."
	fs := f.FlagSet
	var cfg docker.Config
	var mounts, labels multiFlag
	var kf k8sFlags
	kf.register(fs)
	fs.StringVar(&cfg.Image, "image", "pi-sandbox/debian", "`IMAGE` on the engine (nothing is pulled; pi-sandbox image build builds ours)")
	fs.StringVar(&cfg.WorkDir, "workdir", "", "working `DIR` in the container (default /workspace, a fresh volume)")
	fs.StringVar(&cfg.User, "user", "", "run as `UID:GID` or NAME[:GROUP] (default: the first mount's owner, else 1000:1000)")
	fs.Var(&mounts, "mount", "bind mount `HOST:TARGET[:ro]` (repeatable)")
	fs.Var(&labels, "label", "extra label `KEY=VALUE` (repeatable)")
	fs.Var((*sizeFlag)(&cfg.Memory), "memory", "memory limit `SIZE`, e.g. 512m, 2g (default 2g; -1 none)")
	fs.Float64Var(&cfg.CPUs, "cpus", 0, "CPU limit `N` (default 2; -1 none)")
	fs.Int64Var(&cfg.PidsLimit, "pids-limit", 0, "process and thread limit `N` (default 2048; -1 none)")
	fs.StringVar(&cfg.Runtime, "runtime", "", "the engine's OCI `RUNTIME`, e.g. runsc (gVisor: make runtimes installs it; default the engine's)")
	fs.BoolVar(&cfg.AllowNetwork, "allow-network", false, "relaxation: attach to the engine's default network (default: none)")
	fs.BoolVar(&cfg.WritableRootfs, "writable-rootfs", false, "relaxation: writable root file system")
	fs.Var((*sizeFlag)(&cfg.MaxSavedOutput), "max-saved-output", "total `SIZE` of the saved full outputs and background logs, e.g. 4g, 512m (default 4g; -1 none)")
	fs.DurationVar(&cfg.TTL, "ttl", 0, "end the sandbox `DURATION` after its start, e.g. 30m (the container kills everything and is removed with its volumes; default: never)")
	fs.DurationVar(&cfg.IdleTimeout, "idle-timeout", 0, "end the sandbox after `DURATION` without a client call (a running call counts, background processes do not; default: never)")
	pool := fs.String("pool", "", "claim an idle member of pool `NAME` (pi-sandbox pool fill) instead; its configuration applies")
	noCold := fs.Bool("no-cold", false, "with --pool: fail when no idle member is left instead of starting one cold")
	rest, code, ok := f.parse(args)
	if !ok {
		return code
	}
	if len(rest) != 0 {
		return f.usageError("unexpected arguments %q", rest)
	}
	if msg := lifetimeUsage(cfg); msg != "" {
		return f.usageError("%s", msg)
	}
	if *pool != "" || *noCold {
		if msg := kf.check(); msg != "" {
			return f.usageError("%s", msg)
		}
		if kf.backend == "k8s" {
			return upPoolK8s(ctx, f, &kf, *pool, *noCold, cfg.TTL, io)
		}
		return upPool(ctx, f, *pool, *noCold, io)
	}
	if msg := kf.check(); msg != "" {
		return f.usageError("%s", msg)
	}
	if kf.backend == "k8s" {
		if cfg.TTL != 0 || cfg.IdleTimeout != 0 {
			return f.usageError("--ttl and --idle-timeout are for the docker backend")
		}
		if cfg.MaxSavedOutput != 0 {
			return f.usageError("--max-saved-output is for the docker backend; a pod's saved outputs have the default total (%s)", savedout.Size(ops.DefaultSavedOutputTotal))
		}
		return upK8s(ctx, &kf, cfg.Image, cfg.WorkDir, cfg.User, mounts, labelMap(labels), io)
	}
	for _, m := range mounts {
		pm, err := docker.ParseMount(m)
		if err != nil {
			return f.usageError("%v", err)
		}
		cfg.Mounts = append(cfg.Mounts, pm)
	}
	cfg.Labels = map[string]string{}
	for _, l := range labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return f.usageError("label %q: want KEY=VALUE", l)
		}
		cfg.Labels[k] = v
	}
	if _, ok := cfg.Labels[labelOwner]; !ok {
		cfg.Labels[labelOwner] = ownerValue()
	}
	cfg.Note = noteTo("up", io)
	id, err := docker.Up(ctx, cfg)
	if err != nil {
		fmt.Fprintln(io.err, "pi-sandbox up:", err)
		return openExitCode(err)
	}
	fmt.Fprintln(io.out, id)
	return 0
}

// lifetimeUsage is why cfg's lifetime flags are a usage error, or "".
func lifetimeUsage(cfg docker.Config) string {
	if cfg.TTL < 0 || cfg.IdleTimeout < 0 || cfg.MaxIdle < 0 {
		return "--ttl, --idle-timeout and --max-idle must not be negative"
	}
	return ""
}

// labelMap turns KEY=VALUE flags into a map (bad entries are skipped
// here; runUp reports them for docker).
func labelMap(labels []string) map[string]string {
	m := map[string]string{}
	for _, l := range labels {
		if k, v, ok := strings.Cut(l, "="); ok && k != "" {
			m[k] = v
		}
	}
	return m
}

// upPoolConfigFlags are the flags a pool's configuration replaces.
var upPoolConfigFlags = []string{"image", "user", "workdir", "mount", "label", "memory", "cpus", "pids-limit", "runtime",
	"allow-network", "writable-rootfs", "max-saved-output", "ttl", "idle-timeout"}

// upPool is `up --pool NAME [--no-cold]`: a claim of a pool's idle member.
func upPool(ctx context.Context, f *flagSet, pool string, noCold bool, io stdio) int {
	if pool == "" {
		return f.usageError("--no-cold needs --pool")
	}
	if bad := visited(f, upPoolConfigFlags); bad != "" {
		return f.usageError("--%s with --pool: the pool's configuration applies", bad)
	}
	cli, err := docker.NewClient()
	if err != nil {
		fmt.Fprintln(io.err, "pi-sandbox up:", err)
		return 1
	}
	defer cli.Close()
	id, err := docker.Claim(ctx, cli, pool, noCold, noteTo("up", io))
	if err != nil {
		fmt.Fprintln(io.err, "pi-sandbox up:", err)
		return openExitCode(err)
	}
	fmt.Fprintln(io.out, id)
	return 0
}
