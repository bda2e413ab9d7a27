package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/sandbox/open"
)

// flagSet is a command's flags and help. Every command parses the same way:
// flags may come before, between and after the positional arguments, "--"
// ends the flags, -h/--help prints the help on stdout (exit 0), and a usage
// error is one line plus a pointer to -h on stderr (exit 2).
type flagSet struct {
	*flag.FlagSet
	name     string // the command as typed: "up", "image build"
	synopsis string // what follows "pi-sandbox NAME" in the usage line
	// about is printed between the usage line and the flags ("" for none).
	about string
	io    stdio
}

func newFlagSet(name, synopsis string, sio stdio) *flagSet {
	f := &flagSet{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError), name: name, synopsis: synopsis, io: sio}
	// The flag package's own messages and usage are not printed: parse
	// reports errors in one line and -h with help.
	f.SetOutput(io.Discard)
	f.Usage = func() {}
	return f
}

// help writes the command's help: "Usage: pi-sandbox NAME SYNOPSIS", the
// about text, then "Flags:" and each flag with its placeholder and default.
func (f *flagSet) help(w io.Writer) {
	fmt.Fprintln(w, strings.TrimSpace("Usage: pi-sandbox "+f.name+" "+f.synopsis))
	if f.about != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(f.about, "\n"))
	}
	n := 0
	f.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return
	}
	fmt.Fprintln(w, "\nFlags:")
	f.SetOutput(w)
	f.PrintDefaults()
	f.SetOutput(io.Discard)
}

// parse parses args, flags anywhere. When ok is false the command must
// return code: 0 after -h (help printed on stdout), 2 for a usage error
// (reported).
func (f *flagSet) parse(args []string) (rest []string, code int, ok bool) {
	flags, rest := f.split(args)
	if err := f.Parse(flags); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			f.help(f.io.out)
			return nil, 0, false
		}
		return nil, f.usageError("%v", err), false
	}
	return rest, 0, true
}

// split separates the flags (with the values of the flags that take one)
// from the positional arguments, keeping each group's order, so that Parse
// sees only flags. A lone "-" is positional (stdin); "--" ends the flags. A
// value flag takes the next word whatever it is, as the flag package does.
func (f *flagSet) split(args []string) (flags, pos []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return flags, append(pos, args[i+1:]...)
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		name := a[1:]
		if name[0] == '-' {
			name = name[1:]
		}
		if strings.Contains(name, "=") {
			continue
		}
		fl := f.Lookup(name)
		if fl == nil || isBoolFlag(fl) {
			continue // Parse reports an unknown flag
		}
		if i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	return flags, pos
}

func isBoolFlag(fl *flag.Flag) bool {
	b, ok := fl.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// usageError reports a usage error in one line, with the pointer to the
// command's help, and returns exit code 2.
func (f *flagSet) usageError(format string, a ...any) int {
	fmt.Fprintf(f.io.err, "pi-sandbox %s: %s\nRun 'pi-sandbox %s -h' for usage\n", f.name, fmt.Sprintf(format, a...), f.name)
	return 2
}

// cmdFlags is the flag set of a command that opens a sandbox: the backend
// and policy flags every such command shares (parsed in this one place)
// plus the command's own.
type cmdFlags struct {
	*flagSet
	cfg open.Config
}

// newFlags makes the flag set of command name; usage is the synopsis after
// "pi-sandbox NAME".
func newFlags(name, usage string, io stdio) *cmdFlags {
	f := &cmdFlags{flagSet: newFlagSet(name, usage, io)}
	f.cfg.RegisterFlags(f.FlagSet)
	return f
}

// parse parses args (flags anywhere) and checks the backend flags. When ok
// is false the command must return code: 0 for -h, 2 for a usage error
// (already reported).
func (f *cmdFlags) parse(args []string) (rest []string, code int, ok bool) {
	rest, code, ok = f.flagSet.parse(args)
	if !ok {
		return nil, code, false
	}
	f.cfg.Backend = f.cfg.BackendName()
	if err := f.cfg.Validate(); err != nil {
		return nil, f.usageError("%v", err), false
	}
	// A policy that protects less than it says (a redact-env name that is
	// not set) runs, with a word on stderr.
	for _, w := range f.cfg.Policy.Warnings() {
		fmt.Fprintf(f.io.err, "pi-sandbox %s: warning: %s\n", f.name, w)
	}
	return rest, 0, true
}

// session is an open backend's tools and the loop options it needs
// (policy hooks, once the sandbox layer provides them).
type session struct {
	tools []loop.Tool
	opts  []loop.Option
	close func() error
	// note says why the session runs without the helper it was not told
	// to go without ("" when it has it).
	note string
}

// openSession opens the configured backend. Tests replace it to run the
// commands on test tools without a backend.
var openSession = func(ctx context.Context, cfg open.Config) (*session, error) {
	sb, err := open.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	// The sandbox's policy hooks: command rules, redaction, audit.
	return &session{tools: sb.Tools(), opts: sb.LoopOptions(), close: sb.Close, note: fallbackNote(cfg, sb.Backend().Info())}, nil
}

// fallbackNote says why a session runs on the fallback path when
// --no-helper did not ask for it (the target cannot run the helper: another
// OS or architecture, no exec-capable directory, a start failure): the
// backend's limits about the helper and the shim. "" when the helper runs.
func fallbackNote(cfg open.Config, info ops.Info) string {
	if cfg.NoHelper || info.Has("helper") {
		return ""
	}
	var why []string
	for _, l := range info.Limits {
		if strings.HasPrefix(l, "no helper") || strings.HasPrefix(l, "no shim") {
			why = append(why, l)
		}
	}
	if len(why) == 0 {
		why = append(why, "the backend did not say why")
	}
	return "the helper does not run in the target, the fallback path serves: " + strings.Join(why, "; ")
}

// openLoop opens the backend and makes the loop; on failure it reports the
// error and returns its exit code (openExitCode).
func openLoop(ctx context.Context, name string, cfg open.Config, io stdio, extra ...loop.Option) (*loop.Loop, func(), int) {
	cfg.Note = noteTo(name, io)
	s, err := openSession(ctx, cfg)
	if err != nil {
		fmt.Fprintf(io.err, "pi-sandbox %s: %v\n", name, err)
		return nil, nil, openExitCode(err)
	}
	if s.note != "" {
		fmt.Fprintf(io.err, "pi-sandbox %s: note: %s\n", name, s.note)
	}
	l, err := loop.New(s.tools, append(append([]loop.Option{}, s.opts...), extra...)...)
	if err != nil {
		s.close()
		fmt.Fprintf(io.err, "pi-sandbox %s: %v\n", name, err)
		return nil, nil, 1
	}
	return l, func() {
		if err := s.close(); err != nil {
			fmt.Fprintf(io.err, "pi-sandbox %s: close: %v\n", name, err)
		}
	}, 0
}

// openExitCode is the exit status for a backend that could not be opened:
// 2 when the engine refused the configuration, 1 otherwise.
func openExitCode(err error) int {
	if errors.Is(err, ops.ErrConfig) {
		return 2
	}
	return 1
}

// sizeFlag is a size in bytes, the value of every SIZE flag: a number of
// bytes with an optional suffix k, m, g or t in either case (powers of
// 1024: 512m, 2g, 1G, 100k), or -1 for none.
type sizeFlag int64

func (f *sizeFlag) String() string {
	if *f == 0 {
		return ""
	}
	return strconv.FormatInt(int64(*f), 10)
}

func (f *sizeFlag) Set(v string) error {
	if v == "-1" {
		*f = -1
		return nil
	}
	num, shift := strings.ToLower(v), 0
	for i, u := range []string{"k", "m", "g", "t"} {
		if n, ok := strings.CutSuffix(num, u); ok {
			num, shift = n, 10*(i+1)
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64>>shift {
		return fmt.Errorf("want a positive size such as 4g, 512m or 1000000 (bytes), or -1 for none")
	}
	*f = sizeFlag(n << shift)
	return nil
}

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// noteTo returns the note callback of command name: one line on stderr.
func noteTo(name string, io stdio) func(string) {
	return func(s string) { fmt.Fprintf(io.err, "pi-sandbox %s: note: %s\n", name, s) }
}
