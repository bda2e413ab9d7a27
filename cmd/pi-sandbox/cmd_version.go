package main

import (
	"context"
	"fmt"
)

func init() {
	register("version", &command{
		summary: "print the version",
		run: func(ctx context.Context, args []string, io stdio) int {
			fmt.Fprintln(io.out, "pi-sandbox dev")
			return 0
		},
	})
}
