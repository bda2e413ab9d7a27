//go:build !linux

package shim

import (
	"fmt"
	"io"
)

func keepMain(args []string, stderr io.Writer) int {
	fmt.Fprintln(stderr, "pi-sandbox-shim: keep: only on linux")
	return 2
}

func endContainer(stderr io.Writer) {}
