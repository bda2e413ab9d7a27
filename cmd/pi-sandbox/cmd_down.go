package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

func init() {
	register("down", &command{summary: "remove sandbox containers or pods (down [--backend k8s] ID...)", run: runDown})
}

// runDown is `pi-sandbox down ID...`: it removes containers pi-sandbox
// created (with their volumes) and refuses any other. Removing an up
// sandbox ends its helper daemon and every process it owns.
func runDown(ctx context.Context, args []string, io stdio) int {
	fs := flag.NewFlagSet("down", flag.ContinueOnError)
	fs.SetOutput(io.err)
	var kf k8sFlags
	kf.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(io.err, "usage: pi-sandbox down [--backend k8s [--kubeconfig FILE] [--context NAME] [--namespace NS]] ID...")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	args = fs.Args()
	if len(args) == 0 {
		fs.Usage()
		return 2
	}
	if !kf.check("down", io) {
		return 2
	}
	if kf.backend == "k8s" {
		return downK8s(ctx, &kf, args, io)
	}
	cli, err := docker.NewClient()
	if err != nil {
		fmt.Fprintln(io.err, "pi-sandbox down:", err)
		return 1
	}
	defer cli.Close()
	code := 0
	for _, id := range args {
		if err := docker.Down(ctx, cli, id); err != nil {
			fmt.Fprintln(io.err, "pi-sandbox down:", err)
			code = 1
			continue
		}
		fmt.Fprintln(io.out, id)
	}
	return code
}
