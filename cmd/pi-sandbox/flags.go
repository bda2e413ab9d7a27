package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/sandbox/open"
)

// cmdFlags is a command's flag set: the backend flags every command shares
// (parsed in this one place) plus the command's own.
type cmdFlags struct {
	*flag.FlagSet
	cfg  open.Config
	name string
	io   stdio
}

// newFlags makes the flag set of command name; usage is the synopsis after
// "pi-sandbox NAME".
func newFlags(name, usage string, io stdio) *cmdFlags {
	f := &cmdFlags{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError), name: name, io: io}
	f.SetOutput(io.err)
	f.Usage = func() {
		fmt.Fprintf(io.err, "usage: pi-sandbox %s %s\n\nflags:\n", name, usage)
		f.PrintDefaults()
	}
	f.cfg.RegisterFlags(f.FlagSet)
	return f
}

// parse parses args. When ok is false the command must return code: 0 for
// -h, 2 for a usage error (already reported).
func (f *cmdFlags) parse(args []string) (rest []string, code int, ok bool) {
	if code, ok := parseFlags(f.FlagSet, args); !ok {
		return nil, code, false
	}
	if err := f.cfg.Validate(); err != nil {
		fmt.Fprintf(f.io.err, "pi-sandbox %s: %v\n", f.name, err)
		return nil, 2, false
	}
	// A policy that protects less than it says (a redact-env name that is
	// not set) runs, with a word on stderr.
	for _, w := range f.cfg.Policy.Warnings() {
		fmt.Fprintf(f.io.err, "pi-sandbox %s: warning: %s\n", f.name, w)
	}
	return f.Args(), 0, true
}

// usageError reports a usage error and returns exit code 2.
func (f *cmdFlags) usageError(format string, a ...any) int {
	fmt.Fprintf(f.io.err, "pi-sandbox %s: %s\n", f.name, fmt.Sprintf(format, a...))
	f.Usage()
	return 2
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
// error and returns exit code 1.
func openLoop(ctx context.Context, name string, cfg open.Config, io stdio, extra ...loop.Option) (*loop.Loop, func(), int) {
	s, err := openSession(ctx, cfg)
	if err != nil {
		fmt.Fprintf(io.err, "pi-sandbox %s: %v\n", name, err)
		return nil, nil, 1
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

// parseFlags parses args into fs; when it fails, code is the exit code: 0
// after -h, 2 for a usage error (fs has printed why).
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return 2, false
	}
	return 0, true
}
