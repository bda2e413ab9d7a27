package main

import (
	"context"
	"fmt"
	"slices"
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

// runImage is `pi-sandbox image build [--force] [NAME...]` (build the
// local images; progress on stderr) and `pi-sandbox image ls [NAME...]`
// (each image's ref and whether the engine has it).
func runImage(ctx context.Context, args []string, io stdio) int {
	top := newFlagSet("image", "build|ls [flags] [NAME...]", io)
	top.about = "image build builds the local images (progress on stderr); image ls prints each image's\nref and whether the engine has it. Images: " + strings.Join(images.Names(), ", ") + ".\nRun 'pi-sandbox image build -h' for build's flags."
	// Flags may come before the subcommand too: image --force build.
	if i := slices.IndexFunc(args, func(a string) bool { return a == "build" || a == "ls" }); i > 0 &&
		!slices.ContainsFunc(args[:i], func(a string) bool { return !strings.HasPrefix(a, "-") || a == "-" || a == "--" }) {
		args = append([]string{args[i]}, append(slices.Clone(args[:i]), args[i+1:]...)...)
	}
	if len(args) == 0 || (args[0] != "build" && args[0] != "ls") {
		// Only -h and --help reach here as flags: image's own flags
		// belong to its subcommands.
		rest, code, ok := top.parse(args)
		if !ok {
			return code
		}
		if len(rest) == 0 {
			return top.usageError("want build or ls")
		}
		return top.usageError("unknown subcommand %q (want build or ls)", rest[0])
	}
	sub := args[0]
	f := newFlagSet("image "+sub, "[NAME...]", io)
	var force *bool
	if sub == "build" {
		f.synopsis = "[flags] [NAME...]"
		f.about = "Builds the local images (default all: " + strings.Join(images.Names(), ", ") + ") on the engine,\nwithout a registry, and prints their refs (NAME:CONTENT-TAG) on stdout; an image whose content\ntag is present is not rebuilt. Progress goes to stderr."
		force = f.Bool("force", false, "rebuild even when the content tag is present")
	} else {
		f.about = "Prints each image's ref and whether the engine has it (default all: " + strings.Join(images.Names(), ", ") + ")."
	}
	names, code, ok := f.parse(args[1:])
	if !ok {
		return code
	}
	cli, err := docker.NewClient()
	if err != nil {
		fmt.Fprintf(io.err, "pi-sandbox image %s: %v\n", sub, err)
		return 1
	}
	defer cli.Close()
	if _, err := docker.Ping(ctx, cli); err != nil {
		fmt.Fprintf(io.err, "pi-sandbox image %s: %v\n", sub, err)
		return 1
	}
	b := &images.Builder{Client: cli, Progress: io.err}
	if sub == "ls" {
		if len(names) == 0 {
			names = images.Names()
		}
		st, err := b.Check(ctx, names...)
		if err != nil {
			fmt.Fprintf(io.err, "pi-sandbox image %s: %v\n", sub, err)
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
	b.Force = *force
	if err := b.Ensure(ctx, names...); err != nil {
		fmt.Fprintf(io.err, "pi-sandbox image %s: %v\n", sub, err)
		return 1
	}
	// What it made, alone on stdout: the images' refs.
	if len(names) == 0 {
		names = images.Names()
	}
	st, err := b.Check(ctx, names...)
	if err != nil {
		fmt.Fprintf(io.err, "pi-sandbox image %s: %v\n", sub, err)
		return 1
	}
	for _, s := range st {
		fmt.Fprintln(io.out, s.Ref)
	}
	return 0
}
