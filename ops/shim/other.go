//go:build !linux

package shim

import (
	"fmt"
	"io"
)

func runMain(args []string, stderr io.Writer) int {
	fmt.Fprintln(stderr, "pi-sandbox-shim: run: only on linux")
	return 2
}

func killMain(args []string, stderr io.Writer) int {
	fmt.Fprintln(stderr, "pi-sandbox-shim: kill: only on linux")
	return 2
}
