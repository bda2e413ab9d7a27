package main

import (
	"context"

	"github.com/pi-sandbox/pi-sandbox/ops/shim"
)

func init() {
	// Dispatch in init, before main's signal handling is installed: the shim
	// handles its own signals. It exits the process for "__shim ..." and
	// records that this binary can serve as the local backend's shim.
	shim.Dispatch()
	register(shim.Subcommand, &command{
		summary: "in-target process helper (internal)",
		hidden:  true,
		run: func(ctx context.Context, args []string, io stdio) int {
			return shim.Main(args)
		},
	})
}
