package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

func init() {
	register("gc", &command{summary: "remove leaked pi-sandbox containers", run: runGC})
}

// runGC is `pi-sandbox gc [--all] [--max-age D]`: it removes our stopped
// containers and ephemeral ones whose creating process is gone (or, from
// another host, older than --max-age); --all removes every one of ours,
// long-lived sandboxes included.
func runGC(ctx context.Context, args []string, io stdio) int {
	fs := flag.NewFlagSet("gc", flag.ContinueOnError)
	fs.SetOutput(io.err)
	all := fs.Bool("all", false, "remove every pi-sandbox container, running sandboxes included")
	maxAge := fs.Duration("max-age", 24*time.Hour, "age after which an ephemeral container from another host counts as leaked")
	if code, ok := parseFlags(fs, args); !ok {
		return code
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
	return 0
}
