package main

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/pi-sandbox/pi-sandbox/sandbox/open"
)

func init() {
	register("ps", &command{summary: "list the sandbox's background processes", run: runPS})
}

// psRow is one process in `ps --json`.
type psRow struct {
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	State   string    `json:"state"`
	Command string    `json:"command"`
	Log     string    `json:"log,omitempty"`
}

// runPS is `pi-sandbox ps [backend flags] [--json]`: the processes that
// commands of this sandbox left running, as a table (or JSON lines). A
// process's argv is the sandbox's to choose: its control characters are
// escaped.
func runPS(ctx context.Context, args []string, io stdio) int {
	f := newFlags("ps", "[flags]", io)
	f.about = "Lists the background processes that the sandbox's commands left running: a table, or\none JSON object per line with --json."
	asJSON := f.Bool("json", false, "one JSON object per process")
	rest, code, ok := f.parse(args)
	if !ok {
		return code
	}
	if len(rest) != 0 {
		return f.usageError("takes no arguments")
	}
	sb, err := open.Open(ctx, f.cfg)
	if err != nil {
		fmt.Fprintf(io.err, "pi-sandbox ps: %v\n", err)
		return 1
	}
	defer sb.Close()
	ps, err := sb.Processes(ctx)
	if err != nil {
		fmt.Fprintf(io.err, "pi-sandbox ps: %v\n", err)
		return 1
	}
	if *asJSON {
		for _, p := range ps {
			b, err := json.Marshal(psRow{PID: p.PID, Started: p.Started.UTC(), State: p.State, Command: p.Command, Log: p.Log})
			if err != nil {
				fmt.Fprintf(io.err, "pi-sandbox ps: %v\n", err)
				return 1
			}
			io.out.Write(append(escapeJSONControls(b), '\n'))
		}
		return 0
	}
	tw := tabwriter.NewWriter(io.out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "PID\tSTARTED\tSTATE\tCOMMAND")
	for _, p := range ps {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", p.PID, p.Started.Local().Format("15:04:05"), escapeControls(p.State, false), escapeControls(p.Command, false))
	}
	tw.Flush()
	return 0
}
