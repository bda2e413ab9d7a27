package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops/docker"
	"github.com/pi-sandbox/pi-sandbox/ops/k8s"
)

// Pools on Kubernetes (--backend k8s): agent-sandbox's SandboxTemplate,
// SandboxWarmPool and SandboxClaim.

// poolDockerOnly are pool fill's flags that have no meaning for a pod.
var poolDockerOnly = []string{"pids-limit", "runtime", "allow-network", "writable-rootfs", "max-saved-output", "idle-timeout", "max-idle"}

// poolFillK8s is `pool fill --backend k8s`: the template and warm pool.
func poolFillK8s(ctx context.Context, f *flagSet, kf *k8sFlags, name string, dc docker.Config, size int, io stdio) int {
	if bad := visited(f, poolDockerOnly); bad != "" {
		return f.usageError("--%s is for the docker backend", bad)
	}
	cfg := kf.config()
	cfg.Image, cfg.WorkDir, cfg.User, cfg.Labels = dc.Image, dc.WorkDir, dc.User, dc.Labels
	delete(cfg.Labels, labelOwner) // a docker label; pods carry no owner
	if dc.Memory > 0 {
		cfg.Memory = dc.Memory
	}
	if dc.CPUs > 0 {
		cfg.CPUs = dc.CPUs
	}
	names, err := k8s.PoolFill(ctx, cfg, name, size, dc.TTL, func(s string) { fmt.Fprintf(io.err, "pi-sandbox pool fill: %s\n", s) })
	for _, n := range names {
		fmt.Fprintln(io.out, n)
	}
	if err != nil {
		fmt.Fprintln(io.err, "pi-sandbox pool fill:", err)
		return openExitCode(err)
	}
	return 0
}

// upPoolK8s is `up --backend k8s --pool NAME`: a SandboxClaim; it prints
// the claimed pod's name.
func upPoolK8s(ctx context.Context, f *flagSet, kf *k8sFlags, pool string, noCold bool, ttl time.Duration, io stdio) int {
	if pool == "" {
		return f.usageError("--no-cold needs --pool")
	}
	if noCold {
		return f.usageError("--no-cold is for the docker backend (agent-sandbox starts a cold sandbox when no warm one is left)")
	}
	// A claim has a lifetime of its own: --ttl overrides the pool's.
	flags := slices.DeleteFunc(slices.Clone(upPoolConfigFlags), func(s string) bool { return s == "ttl" })
	if bad := visited(f, flags); bad != "" {
		return f.usageError("--%s with --pool: the pool's configuration applies", bad)
	}
	name, err := k8s.Claim(ctx, kf.config(), pool, ttl)
	if err != nil {
		fmt.Fprintln(io.err, "pi-sandbox up:", err)
		return openExitCode(err)
	}
	fmt.Fprintln(io.out, name)
	return 0
}

// poolLsK8s is `pool ls --backend k8s [NAME]`.
func poolLsK8s(ctx context.Context, f *flagSet, kf *k8sFlags, rest []string, asJSON bool, io stdio) int {
	if len(rest) > 1 {
		return f.usageError("want at most one pool NAME")
	}
	name := ""
	if len(rest) == 1 {
		name = rest[0]
		if err := k8s.CheckPoolName(name); err != nil {
			return f.usageError("%v", err)
		}
	}
	c, ok := kf.client("pool ls", io)
	if !ok {
		return 1
	}
	pools, err := k8s.PoolList(ctx, c, name)
	if err != nil {
		fmt.Fprintln(io.err, "pi-sandbox pool ls:", err)
		return openExitCode(err)
	}
	type row struct {
		Name    string `json:"name"`
		Size    int    `json:"size"`
		Ready   int    `json:"ready"`
		Idle    int    `json:"idle"`
		Claimed int    `json:"claimed"`
		Image   string `json:"image,omitempty"`
	}
	out := []row{}
	for _, p := range pools {
		out = append(out, row{p.Name, p.Size, p.Ready, p.Idle, p.Claimed, p.Image})
	}
	if asJSON {
		b, _ := json.Marshal(out)
		fmt.Fprintln(io.out, string(b))
		return 0
	}
	tw := tabwriter.NewWriter(io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POOL\tSIZE\tREADY\tIDLE\tCLAIMED\tIMAGE")
	for _, r := range out {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\n", r.Name, r.Size, r.Ready, r.Idle, r.Claimed, r.Image)
	}
	tw.Flush()
	return 0
}

// poolDrainK8s is `pool drain --backend k8s NAME`.
func poolDrainK8s(ctx context.Context, f *flagSet, kf *k8sFlags, rest []string, io stdio) int {
	if len(rest) != 1 {
		return f.usageError("want one pool NAME, got %d arguments", len(rest))
	}
	if err := k8s.CheckPoolName(rest[0]); err != nil {
		return f.usageError("%v", err)
	}
	c, ok := kf.client("pool drain", io)
	if !ok {
		return 1
	}
	names, err := k8s.PoolDrain(ctx, c, rest[0])
	for _, n := range names {
		fmt.Fprintln(io.out, n)
	}
	if err != nil {
		fmt.Fprintln(io.err, "pi-sandbox pool drain:", err)
		return openExitCode(err)
	}
	return 0
}

// visited is the first of names set on the command line, or "".
func visited(f *flagSet, names []string) string {
	bad := ""
	f.Visit(func(fl *flag.Flag) {
		if bad == "" && slices.Contains(names, fl.Name) {
			bad = fl.Name
		}
	})
	return bad
}
