package shim

import (
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/pi-sandbox/pi-sandbox/ops/search"
)

// Version is the protocol version printed by `__shim version`.
const Version = 1

// Subcommand is the hidden subcommand that runs the shim.
const Subcommand = "__shim"

var dispatching atomic.Bool

// Dispatch runs the shim and exits the process when os.Args[1] is "__shim";
// otherwise it records that this executable serves the shim and returns
// false. Call it first thing in main and in TestMain.
func Dispatch() bool {
	dispatching.Store(true)
	if len(os.Args) > 1 && os.Args[1] == Subcommand {
		os.Exit(Main(os.Args[2:]))
	}
	return false
}

// Available reports whether Dispatch was called in this process, i.e.
// whether `os.Executable() __shim ...` runs the shim.
func Available() bool { return dispatching.Load() }

// Main runs the shim with args (the arguments after "__shim") and returns the
// process exit status. See the package doc for the protocol.
func Main(args []string) int {
	return mainIO(args, os.Stdout, os.Stderr)
}

func mainIO(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "pi-sandbox-shim: usage: __shim run|kill|serve|relay|keep|grep|find|version ...")
		return 2
	}
	switch args[0] {
	case "run":
		return runMain(args[1:], stderr)
	case "kill":
		return killMain(args[1:], stderr)
	case "grep":
		return search.ShimGrep(args[1:], os.Stdin, stdout)
	case "find":
		return search.ShimFind(args[1:], os.Stdin, stdout)
	case "serve":
		return serveMain(args[1:], stderr)
	case "relay":
		return relayMain(args[1:], stderr)
	case "keep":
		return keepMain(args[1:], stderr)
	case "version":
		fmt.Fprintf(stdout, "pi-sandbox-shim %d\n", Version)
		return 0
	}
	fmt.Fprintf(stderr, "pi-sandbox-shim: unknown mode %q (want run, kill, serve, relay, keep, grep, find or version)\n", args[0])
	return 2
}
