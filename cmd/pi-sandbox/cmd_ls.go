package main

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

func init() {
	register("ls", &command{summary: "list pi-sandbox containers", run: runLs})
}

// runLs is `pi-sandbox ls [-q]`: every container carrying our label, the
// long-lived sandboxes and any ephemeral ones in use (or leaked).
func runLs(ctx context.Context, args []string, io stdio) int {
	fs := flag.NewFlagSet("ls", flag.ContinueOnError)
	fs.SetOutput(io.err)
	quiet := fs.Bool("q", false, "print ids only")
	var kf k8sFlags
	kf.register(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if !kf.check("ls", io) {
		return 2
	}
	if kf.backend == "k8s" {
		return lsK8s(ctx, &kf, *quiet, io)
	}
	cli, err := docker.NewClient()
	if err != nil {
		fmt.Fprintln(io.err, "pi-sandbox ls:", err)
		return 1
	}
	defer cli.Close()
	list, err := docker.List(ctx, cli)
	if err != nil {
		fmt.Fprintln(io.err, "pi-sandbox ls:", err)
		return 1
	}
	if *quiet {
		for _, s := range list {
			fmt.Fprintln(io.out, s.ID)
		}
		return 0
	}
	tw := tabwriter.NewWriter(io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tIMAGE\tKIND\tSTATE\tCREATED")
	for _, s := range list {
		fmt.Fprintf(tw, "%.12s\t%s\t%s\t%s\t%s ago\n", s.ID, escapeControls(s.Image, false), escapeControls(s.Kind, false), escapeControls(s.State, false), time.Since(s.Created).Round(time.Second))
	}
	tw.Flush()
	return 0
}
