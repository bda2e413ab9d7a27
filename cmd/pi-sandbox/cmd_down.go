package main

import (
	"context"
	"fmt"

	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

func init() {
	register("down", &command{summary: "remove sandbox containers (down ID...)", run: runDown})
}

// runDown is `pi-sandbox down ID...`: it removes containers pi-sandbox
// created (with their volumes) and refuses any other.
func runDown(ctx context.Context, args []string, io stdio) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(io.err, "usage: pi-sandbox down ID...")
		if len(args) == 0 {
			return 2
		}
		return 0
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
