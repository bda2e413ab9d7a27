// Command pi-sandbox runs a coding agent's tools (read, write, edit, bash,
// grep, find, ls) on the local machine, in a hardened Docker container, or on
// a remote host over SSH, with the same behaviour everywhere.
//
// Usage:
//
//	pi-sandbox COMMAND [flags] [args]
//
// Flags come after the command and before its arguments. See
// the README for the commands.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// command is one subcommand. run returns the process exit code.
type command struct {
	summary string
	hidden  bool
	run     func(ctx context.Context, args []string, stdio stdio) int
}

type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// commands is filled by the init functions of the cmd_*.go files.
var commands = map[string]*command{}

func register(name string, c *command) {
	if _, dup := commands[name]; dup {
		panic("pi-sandbox: command registered twice: " + name)
	}
	commands[name] = c
}

func main() { os.Exit(mainExit()) }

func mainExit() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runMain(ctx, os.Args[1:], stdio{os.Stdin, os.Stdout, os.Stderr})
}

// runMain runs a command. What it writes to stderr has its control
// characters escaped (newlines and tabs kept): error messages and notes
// carry text from the target.
func runMain(ctx context.Context, args []string, io stdio) int {
	io.err = escapingWriter{io.err}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(io.err)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(io.err, "pi-sandbox: unknown command %q\n\n", args[0])
		usage(io.err)
		return 2
	}
	return c.run(ctx, args[1:], io)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: pi-sandbox COMMAND [flags] [args]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	names := make([]string, 0, len(commands))
	for n, c := range commands {
		if !c.hidden {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'pi-sandbox COMMAND -h' for a command's flags.")
}
