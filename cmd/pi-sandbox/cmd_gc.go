package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

func init() {
	register("gc", &command{summary: "remove leaked pi-sandbox containers", run: runGC})
}

// runGC is `pi-sandbox gc [--all] [--max-age D] [--kill-runsc-orphans]`: it
// removes our stopped containers and ephemeral ones whose creating process
// is gone (or, from another host, older than --max-age); --all removes every
// one of ours, long-lived sandboxes included. It then reports gVisor
// processes (runsc-sandbox, runsc-gofer) of Docker containers the engine no
// longer lists, on stderr; they are killed only with --kill-runsc-orphans,
// because whose container they ran can no longer be told.
func runGC(ctx context.Context, args []string, io stdio) int {
	fs := flag.NewFlagSet("gc", flag.ContinueOnError)
	fs.SetOutput(io.err)
	all := fs.Bool("all", false, "remove every pi-sandbox container, running sandboxes included")
	maxAge := fs.Duration("max-age", 24*time.Hour, "age after which an ephemeral container from another host counts as leaked")
	killRunsc := fs.Bool("kill-runsc-orphans", false, "kill runsc-sandbox/runsc-gofer processes whose container the engine no longer lists (any owner's)")
	var kf k8sFlags
	kf.register(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if !kf.check("gc", io) {
		return 2
	}
	if kf.backend == "k8s" {
		return gcK8s(ctx, &kf, *all, *maxAge, io)
	}
	cli, err := docker.NewClient()
	if err != nil {
		fmt.Fprintln(io.err, "pi-sandbox gc:", err)
		return 1
	}
	defer cli.Close()
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
