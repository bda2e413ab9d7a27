// Command pi-sandbox runs a coding agent's tools (read, write, edit, bash,
// grep, find, ls) on the local machine, in a hardened Docker container, or on
// a remote host over SSH, with the same behaviour everywhere.
//
// Usage:
//
//	pi-sandbox CMD [flags] ARGS
//
// Every command takes its flags before, between or after its arguments;
// "--" ends the flags (what follows is an argument even when it starts
// with "-"). "pi-sandbox CMD -h", "--help" and "pi-sandbox help CMD" print
// a command's usage on stdout and exit 0; a usage error prints one line and
// a pointer to -h on stderr and exits 2. Commands that create something
// print the new ids alone on stdout, one per line; progress and notes go
// to stderr.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
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
	if len(args) == 0 {
		usage(io.err)
		return 2
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		usage(io.out)
		return 0
	case "-version", "--version":
		name = "version"
	case "help":
		if len(args) == 1 {
			usage(io.out)
			return 0
		}
		// "help CMD [SUB]" is "CMD [SUB] -h".
		name, args = args[1], append(slices.Clone(args[1:]), "-h")
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(io.err, "pi-sandbox: unknown command %q\nRun 'pi-sandbox -h' for usage\n", name)
		return 2
	}
	return c.run(ctx, args[1:], io)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: pi-sandbox CMD [flags] ARGS")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
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
	fmt.Fprintln(w, "Flags go before or after a command's arguments; -- ends them.")
	fmt.Fprintln(w, "Run 'pi-sandbox CMD -h' for a command's usage and flags; --version prints the version.")
}
