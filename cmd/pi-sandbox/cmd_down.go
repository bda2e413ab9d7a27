package main

import (
	"context"
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
	f := newFlagSet("down", "[flags] ID...", io)
	f.about = "Removes sandboxes pi-sandbox made (with their volumes; k8s: pods) and prints each id\nremoved. Removing an up sandbox ends every process it runs."
	var kf k8sFlags
	kf.register(f.FlagSet)
	ids, code, ok := f.parse(args)
	if !ok {
		return code
	}
	if len(ids) == 0 {
		return f.usageError("want at least one ID")
	}
	if msg := kf.check(); msg != "" {
		return f.usageError("%s", msg)
	}
	if kf.backend == "k8s" {
		return downK8s(ctx, &kf, ids, io)
	}
	cli, err := docker.NewClient()
	if err != nil {
		fmt.Fprintln(io.err, "pi-sandbox down:", err)
		return 1
	}
	defer cli.Close()
	code = 0
	for _, id := range ids {
		if err := docker.Down(ctx, cli, id); err != nil {
			fmt.Fprintln(io.err, "pi-sandbox down:", err)
			code = 1
			continue
		}
		fmt.Fprintln(io.out, id)
	}
	return code
}
