package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"golang.org/x/term"
)

func init() {
	register("run", &command{summary: "run an agent session: a real model (--model) or a script of assistant turns", run: runRun})
}

// runRun is `pi-sandbox run [flags] --model PROVIDER/MODEL PROMPT…` (a real
// model) or `pi-sandbox run [flags] SCRIPT` (the scripted provider, DESIGN
// §6): the whole agent loop on the chosen backend. Progress for a person on
// a terminal, a plain log otherwise (ending with the final answer), events
// with --json. SCRIPT or PROMPT "-" reads stdin. Exit 1 when the session
// ended in error, hit --max-turns, or a call hit a transport failure.
func runRun(ctx context.Context, args []string, io stdio) int {
	f := newFlags("run", "[flags] (--model PROVIDER/MODEL PROMPT… | SCRIPT)", io)
	f.about = "Runs an agent session on the backend the flags choose: a real model with --model (the\nprompt from the arguments, --prompt, or stdin with -), or a script of assistant turns\n(SCRIPT, or - for stdin). The session's log (events with --json) goes to stdout, notes\nto stderr; exit 1 when the session ended in error or hit --max-turns."
	asJSON := f.Bool("json", false, "print the events as JSON lines")
	prompt := f.String("prompt", "", "a user `PROMPT` to open the session with")
	scriptFile := f.String("script", "", "replay the assistant turns of `FILE` (the same as the SCRIPT argument)")
	save := f.String("save", "", "write the session's assistant turns to `FILE` as a script (replay it with run FILE)")
	maxTurns := f.Int("max-turns", 0, "stop after `N` turns (0: no limit)")
	f.BoolVar(&f.cfg.AutoCheckpoint, "auto-checkpoint", false, autoCheckpointUsage)
	var mf modelFlags
	mf.register(f.FlagSet)
	rest, code, ok := f.parse(args)
	if !ok {
		return code
	}
	var (
		prov loop.Provider
		opts loop.RunOptions
	)
	if mf.model != "" {
		if *scriptFile != "" {
			return f.usageError("--model and --script exclude each other")
		}
		text := strings.Join(rest, " ")
		switch {
		case text != "" && *prompt != "":
			return f.usageError("give the prompt as arguments or with --prompt, not both")
		case text == "":
			text = *prompt
		case text == "-":
			b, err := readAll(io.in)
			if err != nil {
				return f.usageError("stdin: %v", err)
			}
			text = string(b)
		}
		if strings.TrimSpace(text) == "" {
			return f.usageError("want a PROMPT")
		}
		p, cred, err := newModelProvider(mf)
		if err != nil {
			fmt.Fprintf(io.err, "pi-sandbox run: %v\n", err)
			return 2
		}
		cred.guard(&f.cfg.Config)
		prov = p
		opts.Prompts = []loop.Message{loop.UserText(text)}
	} else {
		if mf.others() {
			return f.usageError("--base-url, --system, --max-tokens and --thinking need --model")
		}
		name := *scriptFile
		switch {
		case name != "" && len(rest) > 0:
			return f.usageError("give the script as SCRIPT or with --script, not both")
		case name == "" && len(rest) != 1:
			return f.usageError("want one SCRIPT (or --model PROVIDER/MODEL PROMPT)")
		case name == "":
			name = rest[0]
		}
		script, err := readScript(name, io.in)
		if err != nil {
			return f.usageError("%v", err)
		}
		prov = script
		if *prompt != "" {
			opts.Prompts = []loop.Message{loop.UserText(*prompt)}
		}
	}

	l, closeFn, code := openLoop(ctx, "run", f.cfg, io)
	if l == nil {
		return code
	}
	defer closeFn()
	turns, hitLimit := 0, false
	if *maxTurns > 0 {
		opts.FinishTurn = func(_ context.Context, msg *loop.AssistantMessage, _ []*loop.ToolResultMessage) loop.TurnAction {
			turns++
			if turns >= *maxTurns && len(msg.ToolCalls()) > 0 {
				hitLimit = true
				return loop.TurnStop
			}
			return loop.TurnDefault
		}
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
	var sv *saver
	if *save != "" {
		var err error
		if sv, err = newSaver(*save); err != nil {
			fmt.Fprintf(io.err, "pi-sandbox run: --save: %v\n", err)
			return 1
		}
		emit = sv.wrap(emit)
	}
	msgs := l.Run(ctx, prov, opts, emit)
	if prog != nil {
		prog.close()
	}
	code = 0
	if sv != nil {
		if err := sv.close(); err != nil {
			fmt.Fprintf(io.err, "pi-sandbox run: --save: %v\n", err)
			code = 1
		}
	}
	if jw != nil && jw.err != nil {
		fmt.Fprintf(io.err, "pi-sandbox run: write: %v\n", jw.err)
		return 1
	}
	if hitLimit {
		fmt.Fprintf(io.err, "pi-sandbox run: stopped after --max-turns %d\n", *maxTurns)
		code = 1
	}
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

// readScript reads a script file ("-": r).
func readScript(name string, r io.Reader) (*loop.Script, error) {
	if name == "-" {
		return loop.ReadScript(r)
	}
	fh, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return loop.ReadScript(fh)
}

func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
