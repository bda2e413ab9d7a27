package main

import (
	"context"
	"fmt"
	"time"

	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

func init() {
	register("gc", &command{summary: "remove leaked pi-sandbox containers (--backend k8s: pods)", run: runGC})
}

// runGC is `pi-sandbox gc [--all] [--max-age D] [--dry-run]
// [--kill-runsc-orphans]`: it removes our stopped containers and ephemeral
// ones whose creating process is gone (or, from another host, older than
// --max-age); --all removes every one of ours, long-lived sandboxes
// included. It prints the removed ids; --dry-run prints the ids it would
// remove and removes nothing. It then reports gVisor processes
// (runsc-sandbox, runsc-gofer) of Docker containers the engine no longer
// lists, on stderr; they are killed only with --kill-runsc-orphans (and
// not under --dry-run), because whose container they ran can no longer be
// told.
func runGC(ctx context.Context, args []string, io stdio) int {
	f := newFlagSet("gc", "[flags]", io)
	f.about = "Removes pi-sandbox's stopped containers and ephemeral ones whose creating process is gone\n(from another host: older than --max-age), and prints their ids. Sandboxes made by up stay\nunless --all is given."
	all := f.Bool("all", false, "remove every pi-sandbox container, running sandboxes included")
	dryRun := f.Bool("dry-run", false, "print the ids that would be removed; remove nothing")
	maxAge := f.Duration("max-age", 24*time.Hour, "`DURATION` after which an ephemeral container from another host counts as leaked")
	killRunsc := f.Bool("kill-runsc-orphans", false, "kill runsc-sandbox/runsc-gofer processes whose container the engine no longer lists (any owner's)")
	var kf k8sFlags
	kf.register(f.FlagSet)
	rest, code, ok := f.parse(args)
	if !ok {
		return code
	}
	if len(rest) != 0 {
		return f.usageError("takes no arguments")
	}
	if msg := kf.check(); msg != "" {
		return f.usageError("%s", msg)
	}
	if kf.backend == "k8s" {
		if *killRunsc {
			return f.usageError("--kill-runsc-orphans is for the docker backend")
		}
		return gcK8s(ctx, &kf, *all, *dryRun, *maxAge, io)
	}
	cli, err := docker.NewClient()
	if err != nil {
		fmt.Fprintln(io.err, "pi-sandbox gc:", err)
		return 1
	}
	defer cli.Close()
	if *dryRun {
		list, err := docker.List(ctx, cli)
		if err != nil {
			fmt.Fprintln(io.err, "pi-sandbox gc:", err)
			return 1
		}
		for _, s := range list {
			if *all || docker.Leaked(s, *maxAge) {
				fmt.Fprintln(io.out, s.ID)
			}
		}
		fmt.Fprintln(io.err, "pi-sandbox gc: dry run: nothing removed")
		return gcRunscOrphans(ctx, cli, false, io)
	}
	removed, err := docker.GC(ctx, cli, *all, *maxAge)
	for _, id := range removed {
		fmt.Fprintln(io.out, id)
	}
	if err != nil {
		fmt.Fprintln(io.err, "pi-sandbox gc:", err)
		return 1
	}
	return gcRunscOrphans(ctx, cli, *killRunsc, io)
}

// gcRunscOrphans reports (and with kill, kills) the runsc orphans.
func gcRunscOrphans(ctx context.Context, cli *client.Client, kill bool, io stdio) int {
	orphans, err := docker.RunscOrphans(ctx, cli)
	if err != nil {
		fmt.Fprintln(io.err, "pi-sandbox gc:", err)
		return 1
	}
	code := 0
	for _, p := range orphans {
		if !kill {
			fmt.Fprintf(io.err, "pi-sandbox gc: %s %d (container %.12s, up %s) belongs to a container the engine no longer lists; --kill-runsc-orphans kills it\n", p.Name, p.PID, p.Container, p.Age.Round(time.Second))
			continue
		}
		if err := docker.KillRunscOrphan(p); err != nil {
			fmt.Fprintln(io.err, "pi-sandbox gc:", err)
			code = 1
			continue
		}
		fmt.Fprintf(io.err, "pi-sandbox gc: killed %s %d (container %.12s)\n", p.Name, p.PID, p.Container)
	}
	return code
}
