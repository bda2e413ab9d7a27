package main

import (
	"context"
	"fmt"
	"os"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"golang.org/x/term"
)

func init() {
	register("run", &command{summary: "run an agent session from a script of assistant turns", run: runRun})
}

// runRun is `pi-sandbox run [flags] [--json] SCRIPT`: the whole agent loop
// with the scripted provider (DESIGN §6) on the chosen backend. Progress for
// a person on a terminal, a plain log otherwise, events with --json. SCRIPT
// "-" reads stdin. Exit 1 when the session ended in error or a call hit a
// transport failure.
func runRun(ctx context.Context, args []string, io stdio) int {
	f := newFlags("run", "[flags] [--json] SCRIPT", io)
	asJSON := f.Bool("json", false, "print the events as JSON lines")
	prompt := f.String("prompt", "", "a user prompt to open the session with")
	rest, code, ok := f.parse(args)
	if !ok {
		return code
	}
	if len(rest) != 1 {
		return f.usageError("want one SCRIPT")
	}
	var (
		script *loop.Script
		err    error
	)
	if rest[0] == "-" {
		script, err = loop.ReadScript(io.in)
	} else {
		var fh *os.File
		if fh, err = os.Open(rest[0]); err == nil {
			script, err = loop.ReadScript(fh)
			fh.Close()
		}
	}
	if err != nil {
		return f.usageError("%v", err)
	}

	l, closeFn, code := openLoop(ctx, "run", f.cfg, io)
	if l == nil {
		return code
	}
	defer closeFn()
	var opts loop.RunOptions
	if *prompt != "" {
		opts.Prompts = []loop.Message{loop.UserText(*prompt)}
	}

	var emit loop.EmitFunc
	var prog *progress
	var jw *eventWriter
	if *asJSON {
		jw = newEventWriter(io.out)
		emit = jw.emit
	} else {
		prog = newProgress(io.out, isTerminal(io.out))
		emit = prog.emit
	}
	msgs := l.Run(ctx, script, opts, emit)
	if prog != nil {
		prog.close()
	}
	if jw != nil && jw.err != nil {
		fmt.Fprintf(io.err, "pi-sandbox run: write: %v\n", jw.err)
		return 1
	}
	code = 0
	for _, m := range msgs {
		switch m := m.(type) {
		case *loop.ToolResultMessage:
			if transportFailure(m.Result) {
				fmt.Fprintf(io.err, "pi-sandbox run: %s: %v\n", m.ToolCallID, m.Result.Err)
				code = 1
			}
		case *loop.AssistantMessage:
			if m.StopReason == loop.StopError || m.StopReason == loop.StopAborted {
				fmt.Fprintf(io.err, "pi-sandbox run: session ended: %s: %s\n", m.StopReason, m.ErrorMessage)
				code = 1
			}
		}
	}
	return code
}

func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
