package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

func init() {
	register("pool", &command{summary: "warm pools of sandboxes: docker, or k8s through agent-sandbox (pool fill|keep|ls|drain; up --pool NAME claims one)", run: runPool})
}

var poolSubs = map[string]func(context.Context, []string, stdio) int{
	"fill": runPoolFill, "keep": runPoolKeep, "ls": runPoolLs, "drain": runPoolDrain,
}

// runPool is `pi-sandbox pool fill|keep|ls|drain ...`.
func runPool(ctx context.Context, args []string, io stdio) int {
	if len(args) > 0 {
		if run, ok := poolSubs[args[0]]; ok {
			return run(ctx, args[1:], io)
		}
	}
	top := newFlagSet("pool", "fill|keep|ls|drain [flags] [NAME]", io)
	top.about = "Warm pools of sandboxes: pool fill NAME --size N makes N idle members, up --pool NAME\nclaims one in milliseconds (docker; --backend k8s: agent-sandbox's warm pools and claims).\nRun 'pi-sandbox pool SUBCOMMAND -h' for each one's flags."
	rest, code, ok := top.parse(args)
	if !ok {
		return code
	}
	if len(rest) == 0 {
		return top.usageError("want fill, keep, ls or drain")
	}
	return top.usageError("unknown subcommand %q (want fill, keep, ls or drain)", rest[0])
}

// poolFlags registers a pool's configuration flags (as up takes them) on f
// and returns the function that reads them into a docker.Config, or a
// usage error's reason.
func poolFlags(f *flagSet, size *int) func() (docker.Config, string) {
	var cfg docker.Config
	var mounts, labels multiFlag
	fs := f.FlagSet
	fs.IntVar(size, "size", 0, "the number `N` of idle members")
	fs.StringVar(&cfg.Image, "image", "pi-sandbox/debian", "`IMAGE` on the engine (nothing is pulled)")
	fs.StringVar(&cfg.WorkDir, "workdir", "", "working `DIR` in the container (default /workspace, a fresh volume)")
	fs.StringVar(&cfg.User, "user", "", "run as `UID:GID` or NAME[:GROUP] (default 1000:1000)")
	fs.Var(&mounts, "mount", "`HOST:TARGET` is refused: every claim would share the host directory")
	fs.Var(&labels, "label", "extra label `KEY=VALUE` (repeatable)")
	fs.Var((*sizeFlag)(&cfg.Memory), "memory", "memory limit `SIZE`, e.g. 512m, 2g (default 2g; -1 none)")
	fs.Float64Var(&cfg.CPUs, "cpus", 0, "CPU limit `N` (default 2; -1 none)")
	fs.Int64Var(&cfg.PidsLimit, "pids-limit", 0, "process and thread limit `N` (default 2048; -1 none)")
	fs.StringVar(&cfg.Runtime, "runtime", "", "the engine's OCI `RUNTIME`, e.g. runsc (default the engine's)")
	fs.BoolVar(&cfg.AllowNetwork, "allow-network", false, "relaxation: attach to the engine's default network (default: none)")
	fs.BoolVar(&cfg.WritableRootfs, "writable-rootfs", false, "relaxation: writable root file system")
	fs.Var((*sizeFlag)(&cfg.MaxSavedOutput), "max-saved-output", "total `SIZE` of the saved outputs (default 4g; -1 none)")
	fs.DurationVar(&cfg.TTL, "ttl", 0, "a claimed member ends `DURATION` after its claim (default: never)")
	fs.DurationVar(&cfg.IdleTimeout, "idle-timeout", 0, "a claimed member ends after `DURATION` without a client call (default: never)")
	fs.DurationVar(&cfg.MaxIdle, "max-idle", 0, "an idle member no claim took within `DURATION` of its creation ends (pool keep replaces it; default: never)")
	return func() (docker.Config, string) {
		if msg := lifetimeUsage(cfg); msg != "" {
			return cfg, msg
		}
		if len(mounts) > 0 {
			return cfg, "--mount is refused in a pool's configuration (every claim would share the host directory)"
		}
		if *size < 0 {
			return cfg, "--size must not be negative"
		}
		cfg.Labels = map[string]string{labelOwner: ownerValue()}
		for _, l := range labels {
			k, v, ok := strings.Cut(l, "=")
			if !ok || k == "" {
				return cfg, fmt.Sprintf("label %q: want KEY=VALUE", l)
			}
			cfg.Labels[k] = v
		}
		return cfg, ""
	}
}

// poolName checks the one positional argument, a pool's name.
func poolName(f *flagSet, rest []string) (string, int, bool) {
	if len(rest) != 1 {
		return "", f.usageError("want one pool NAME, got %d arguments", len(rest)), false
	}
	if err := docker.CheckPoolName(rest[0]); err != nil {
		return "", f.usageError("%v", err), false
	}
	return rest[0], 0, true
}

// parsePool parses the arguments of a command that takes a pool's NAME and
// its configuration (read, from poolFlags).
func parsePool(f *flagSet, args []string, read func() (docker.Config, string)) (string, docker.Config, int, bool) {
	rest, code, ok := f.parse(args)
	if !ok {
		return "", docker.Config{}, code, false
	}
	name, code, ok := poolName(f, rest)
	if !ok {
		return "", docker.Config{}, code, false
	}
	cfg, msg := read()
	if msg != "" {
		return "", docker.Config{}, f.usageError("%s", msg), false
	}
	return name, cfg, 0, true
}

// runPoolFill is `pi-sandbox pool fill [flags] NAME --size N`.
func runPoolFill(ctx context.Context, args []string, io stdio) int {
	f := newFlagSet("pool fill", "[flags] NAME --size N", io)
	f.about = "Makes sure pool NAME has N idle running members of this configuration, hardened as up makes\nthem, with the helper daemon started; prints the ids it created on stdout, one per line\n(progress on stderr). Run again it tops the pool up; a changed configuration replaces the\nidle members."
	var size int
	read := poolFlags(f, &size)
	var kf k8sFlags
	kf.register(f.FlagSet)
	name, cfg, code, ok := parsePool(f, args, read)
	if !ok {
		return code
	}
	if msg := kf.check(); msg != "" {
		return f.usageError("%s", msg)
	}
	if kf.backend == "k8s" {
		return poolFillK8s(ctx, f, &kf, name, cfg, size, io)
	}
	ids, err := docker.Fill(ctx, cfg, name, size, func(s string) { fmt.Fprintf(io.err, "pi-sandbox pool fill: %s\n", s) })
	for _, id := range ids {
		fmt.Fprintln(io.out, id)
	}
	if err != nil {
		fmt.Fprintln(io.err, "pi-sandbox pool fill:", err)
		return openExitCode(err)
	}
	return 0
}

// runPoolKeep is `pi-sandbox pool keep [flags] NAME --size N`.
func runPoolKeep(ctx context.Context, args []string, io stdio) int {
	f := newFlagSet("pool keep", "[flags] NAME --size N", io)
	f.about = "Keeps pool NAME topped up to N idle members (as pool fill does, every --interval) until\ninterrupted; prints the ids it creates on stdout, one per line."
	var size int
	read := poolFlags(f, &size)
	interval := f.Duration("interval", 2*time.Second, "how often the pool is checked (`DURATION`)")
	name, cfg, code, ok := parsePool(f, args, read)
	if !ok {
		return code
	}
	if *interval <= 0 {
		return f.usageError("--interval must be positive")
	}
	err := docker.Keep(ctx, cfg, name, size, *interval,
		func(id string) { fmt.Fprintln(io.out, id) },
		func(s string) { fmt.Fprintf(io.err, "pi-sandbox pool keep: %s\n", s) })
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(io.err, "pi-sandbox pool keep:", err)
		return openExitCode(err)
	}
	return 0
}

// runPoolDrain is `pi-sandbox pool drain NAME`.
func runPoolDrain(ctx context.Context, args []string, io stdio) int {
	f := newFlagSet("pool drain", "NAME", io)
	f.about = "Removes pool NAME's idle members and prints their ids; claimed members stay. An empty or\nunknown pool has nothing to drain (exit 0)."
	var kf k8sFlags
	kf.register(f.FlagSet)
	rest, code, ok := f.parse(args)
	if !ok {
		return code
	}
	if msg := kf.check(); msg != "" {
		return f.usageError("%s", msg)
	}
	if kf.backend == "k8s" {
		return poolDrainK8s(ctx, f, &kf, rest, io)
	}
	name, code, ok := poolName(f, rest)
	if !ok {
		return code
	}
	cli, err := docker.NewClient()
	if err != nil {
		fmt.Fprintln(io.err, "pi-sandbox pool drain:", err)
		return 1
	}
	defer cli.Close()
	ids, err := docker.Drain(ctx, cli, name)
	for _, id := range ids {
		fmt.Fprintln(io.out, id)
	}
	if err != nil {
		fmt.Fprintln(io.err, "pi-sandbox pool drain:", err)
		return 1
	}
	return 0
}
