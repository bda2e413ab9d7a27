// Command pi-sandbox-shim is the program pi-sandbox puts into targets
// (containers, ssh hosts, pods) and runs locally as its helper: `__shim
// serve` (the in-target helper), `__shim run` (one command as a child
// subreaper), kill, grep, find and version — package ops/shim. It holds only
// what runs in a target, so it stays small and starts fast; build it static
// (CGO_ENABLED=0). The pi-sandbox CLI looks for it next to its own
// executable.
package main

import (
	"fmt"
	"os"

	"github.com/pi-sandbox/pi-sandbox/ops/shim"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == shim.Subcommand {
		os.Exit(shim.Main(os.Args[2:]))
	}
	fmt.Fprintln(os.Stderr, "pi-sandbox-shim: the in-target helper of pi-sandbox; run by pi-sandbox as `pi-sandbox-shim __shim serve|run|kill|grep|find|version`")
	os.Exit(2)
}
