package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/ops/docker"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
	"github.com/pi-sandbox/pi-sandbox/sandbox/pool"
)

// servePoolConflicts are the flags a pool's configuration replaces in
// `serve --http ADDR --pool NAME` (the backend flags that would choose or
// make a target, and those of the member's helper).
var servePoolConflicts = []string{"image", "container", "mount", "user", "runtime", "workdir", "no-helper", "max-background",
	"host", "identity", "known-hosts", "kubeconfig", "context", "namespace", "pod", "agent-sandbox", "k8s-container"}

// parse is f.parse for serve. With --pool a member claimed per session
// stands where --container would: the backend is docker, and the flags
// that would choose or make the target are refused here, since the
// backend check (open.Config.Validate) would ask for --image or --container.
func (h *httpFlags) parse(f *cmdFlags, args []string) ([]string, int, bool) {
	if !poolGiven(f, args) {
		return f.parse(args)
	}
	rest, code, ok := f.flagSet.parse(args)
	if !ok {
		return nil, code, false
	}
	bad := ""
	f.Visit(func(fl *flag.Flag) {
		if bad == "" && slices.Contains(servePoolConflicts, fl.Name) {
			bad = fl.Name
		}
	})
	switch {
	case h.pool == "":
		return nil, f.usageError("--pool needs a pool NAME"), false
	case f.cfg.Backend != "" && f.cfg.Backend != "docker":
		return nil, f.usageError("--pool is for the docker backend"), false
	case bad != "":
		return nil, f.usageError("--%s with --pool: the pool's configuration applies", bad), false
	}
	f.cfg.Backend = "docker"
	for _, w := range f.cfg.Policy.Warnings() {
		fmt.Fprintf(f.io.err, "pi-sandbox %s: warning: %s\n", f.name, w)
	}
	return rest, 0, true
}

// poolGiven is whether args set --pool.
func poolGiven(f *cmdFlags, args []string) bool {
	flags, _ := f.split(args)
	for _, a := range flags {
		name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if name == "pool" || strings.HasPrefix(name, "pool=") {
			return true
		}
	}
	return false
}

// poolSandboxes returns how each session's sandbox is made with --pool: a
// member of the pool claimed (sandbox/pool, as `up --pool` claims one, cold
// when none is idle unless --no-cold), with the flags' confinement and
// policy; closing the sandbox at the session's end removes the container.
// A pool without any member is refused here (exit 2); done releases the
// engine's client.
func poolSandboxes(ctx context.Context, cfg sandbox.Config, hf *httpFlags, io stdio) (newSandbox func(context.Context, string) (*sandbox.Sandbox, error), done func(), code int) {
	fail := func(err error) (func(context.Context, string) (*sandbox.Sandbox, error), func(), int) {
		fmt.Fprintf(io.err, "pi-sandbox serve: %v\n", err)
		return nil, nil, openExitCode(err)
	}
	if err := docker.CheckPoolName(hf.pool); err != nil {
		return fail(err)
	}
	cli, err := docker.NewClient()
	if err != nil {
		return fail(err)
	}
	members, err := docker.PoolMembers(ctx, cli, hf.pool)
	if err == nil && len(members) == 0 {
		fmt.Fprintf(io.err, "pi-sandbox serve: docker: no pool %s (pi-sandbox pool fill makes one)\n", hf.pool)
		cli.Close()
		return nil, nil, 2
	}
	if err != nil {
		cli.Close()
		return fail(err)
	}
	p := &pool.Pool{Name: hf.pool, Config: docker.Config{Client: cli}, NoCold: hf.noCold, Note: noteTo("serve", io)}
	return func(ctx context.Context, _ string) (*sandbox.Sandbox, error) { return p.Claim(ctx, cfg) },
		func() { cli.Close() }, 0
}
