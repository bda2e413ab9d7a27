package main

import (
	"context"
	"fmt"
)

// version is what `pi-sandbox version` and `pi-sandbox --version` print.
const version = "pi-sandbox dev"

func init() {
	register("version", &command{summary: "print the version (also --version)", run: runVersion})
}

func runVersion(ctx context.Context, args []string, io stdio) int {
	f := newFlagSet("version", "", io)
	f.about = "Prints the version; pi-sandbox --version prints the same."
	rest, code, ok := f.parse(args)
	if !ok {
		return code
	}
	if len(rest) != 0 {
		return f.usageError("takes no arguments")
	}
	fmt.Fprintln(io.out, version)
	return 0
}
