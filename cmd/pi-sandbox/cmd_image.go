package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/images"
	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

func init() {
	register("image", &command{
		summary: "build the container images without a registry (image build [--force] [NAME...]; image ls)",
		run:     runImage,
	})
}

func runImage(ctx context.Context, args []string, io stdio) int {
	if len(args) == 0 || (args[0] != "build" && args[0] != "ls") {
		fmt.Fprintln(io.err, "usage: pi-sandbox image build [--force] [NAME...] | pi-sandbox image ls")
		fmt.Fprintln(io.err, "images: "+strings.Join(images.Names(), ", "))
		return 2
	}
	fs := flag.NewFlagSet("image "+args[0], flag.ContinueOnError)
	fs.SetOutput(io.err)
	force := fs.Bool("force", false, "rebuild even when the content tag is present")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	cli, err := docker.NewClient()
	if err != nil {
		fmt.Fprintln(io.err, "pi-sandbox:", err)
		return 1
	}
	defer cli.Close()
	if _, err := docker.Ping(ctx, cli); err != nil {
		fmt.Fprintln(io.err, "pi-sandbox:", err)
		return 1
	}
	b := &images.Builder{Client: cli, Progress: io.err, Force: *force}
	names := fs.Args()
	if args[0] == "ls" {
		if len(names) == 0 {
			names = images.Names()
		}
		st, err := b.Check(ctx, names...)
		if err != nil {
			fmt.Fprintln(io.err, "pi-sandbox:", err)
			return 1
		}
		for _, s := range st {
			state := "missing"
			if s.Present {
				state = "present"
			}
			fmt.Fprintf(io.out, "%s\t%s\n", s.Ref, state)
		}
		return 0
	}
	if err := b.Ensure(ctx, names...); err != nil {
		fmt.Fprintln(io.err, "pi-sandbox:", err)
		return 1
	}
	return 0
}
