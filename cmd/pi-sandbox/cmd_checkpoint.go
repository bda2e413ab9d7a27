package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/checkpoint"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
	"github.com/pi-sandbox/pi-sandbox/sandbox/open"
)

func init() {
	register("checkpoint", &command{summary: "record the working directory (checkpoint ls|rm|export|import)", run: runCheckpoint})
}

var checkpointSubs = map[string]func(context.Context, []string, stdio) int{
	"ls": runCheckpointLs, "rm": runCheckpointRm, "export": runCheckpointExport, "import": runCheckpointImport,
}

// autoCheckpointUsage is --auto-checkpoint's help on serve, run and batch.
const autoCheckpointUsage = "checkpoint the working directory after every write, edit and bash call, as call-N (and the tool-call id): diff call-3 call-7, restore call-5; the newest 100 are kept"

// withSandbox opens the configured sandbox for a checkpoint command, runs
// fn and reports its error: exit 2 for a refusal (ops.ErrConfig), 1 for
// any other failure.
func withSandbox(ctx context.Context, name string, cfg open.Config, io stdio, fn func(*sandbox.Sandbox) error) int {
	cfg.Note = noteTo(name, io)
	sb, err := open.Open(ctx, cfg)
	if err != nil {
		fmt.Fprintf(io.err, "pi-sandbox %s: %v\n", name, err)
		return openExitCode(err)
	}
	defer sb.Close()
	err = fn(sb)
	if err == nil {
		return 0
	}
	msg := err.Error()
	if errors.Is(err, ops.ErrUnsupported) {
		if note := fallbackNote(cfg, sb.Backend().Info()); note != "" {
			msg += " (" + note + ")"
		}
		fmt.Fprintf(io.err, "pi-sandbox %s: %s\n", name, escapeControls(msg, false))
		return 2
	}
	fmt.Fprintf(io.err, "pi-sandbox %s: %s\n", name, escapeControls(msg, false))
	return openExitCode(err)
}

// runCheckpoint is `pi-sandbox checkpoint [flags] [--name NAME]
// [--exclude GLOB]...`: it prints the new checkpoint's id.
func runCheckpoint(ctx context.Context, args []string, io stdio) int {
	if len(args) > 0 {
		if run, ok := checkpointSubs[args[0]]; ok {
			return run(ctx, args[1:], io)
		}
	}
	f := newFlags("checkpoint", "[flags] [--name NAME] [--exclude GLOB]... [--freeze] | ls | rm ID | export ID | import", io)
	f.about = "Records the working directory in the sandbox's checkpoint store, in the target, and prints the\ncheckpoint's id. Unchanged files are recognised by their stat data and not read again. FIFOs,\nsockets and devices are skipped (listed on stderr). 'checkpoint ls' lists the checkpoints,\n'checkpoint rm ID' removes one, 'checkpoint export ID > x.tar' writes one as a tar and\n'checkpoint import < x.tar' records such a tar in this sandbox (of any backend); diff and\nrestore take an id or a name (the newest with it)."
	name := f.String("name", "", "call the checkpoint `NAME` (diff, restore and rm take it)")
	var exclude multiFlag
	f.Var(&exclude, "exclude", "leave out paths matching `GLOB` (a base name at any depth, or a path with /); repeatable")
	freeze := f.Bool("freeze", false, "stop the sandbox's processes (what its commands started and left running) while the checkpoint is taken, then resume them")
	var limit sizeFlag
	f.Var(&limit, "store-limit", "limit the store's contents to `SIZE` (e.g. 2g; kept for every later checkpoint and import; -1 removes it): a checkpoint that would pass it fails and keeps nothing")
	rest, code, ok := f.parse(args)
	if !ok {
		return code
	}
	if len(rest) != 0 {
		return f.usageError("takes no arguments (did you mean checkpoint ls, rm, export or import?)")
	}
	if err := checkpoint.CheckExcludes(exclude); err != nil {
		return f.usageError("%v", err)
	}
	return withSandbox(ctx, "checkpoint", f.cfg, io, func(sb *sandbox.Sandbox) error {
		c, skipped, err := sb.Checkpoint(ctx, sandbox.CheckpointOptions{Name: *name, Exclude: exclude, StoreLimit: int64(limit), Freeze: *freeze})
		if err != nil {
			return err
		}
		for _, s := range skipped {
			fmt.Fprintf(io.err, "pi-sandbox checkpoint: skipped %s (not a file, directory or link)\n", checkpoint.QuotePath(s))
		}
		if *freeze {
			fmt.Fprintf(io.err, "pi-sandbox checkpoint: %d processes of the sandbox were stopped while it was taken, and resumed\n", c.Frozen)
		}
		fmt.Fprintln(io.out, c.ID)
		return nil
	})
}

// checkpointRow is one checkpoint in `checkpoint ls --json`.
type checkpointRow struct {
	ID    string `json:"id"`
	Name  string `json:"name,omitempty"`
	Time  string `json:"time"`
	Files int    `json:"files"`
	Bytes int64  `json:"bytes_added"`
	Auto  bool   `json:"auto,omitempty"`
	Call  string `json:"call,omitempty"`
}

// runCheckpointLs is `pi-sandbox checkpoint ls [flags] [--json]`.
func runCheckpointLs(ctx context.Context, args []string, io stdio) int {
	f := newFlags("checkpoint ls", "[flags] [--json]", io)
	f.about = "Lists the working directory's checkpoints, oldest first: id, name, time, entries, bytes the\ncheckpoint added to the store. --json: one array ([] when there is none)."
	asJSON := f.Bool("json", false, "one JSON array of the checkpoints")
	rest, code, ok := f.parse(args)
	if !ok {
		return code
	}
	if len(rest) != 0 {
		return f.usageError("takes no arguments")
	}
	return withSandbox(ctx, "checkpoint ls", f.cfg, io, func(sb *sandbox.Sandbox) error {
		list, err := sb.Checkpoints(ctx)
		if err != nil {
			return err
		}
		if *asJSON {
			rows := make([]checkpointRow, 0, len(list))
			for _, c := range list {
				rows = append(rows, checkpointRow{ID: c.ID, Name: c.Name, Time: c.Time.UTC().Format("2006-01-02T15:04:05.000Z"), Files: c.Files, Bytes: c.Bytes, Auto: c.Auto, Call: c.Call})
			}
			b, err := json.Marshal(rows)
			if err != nil {
				return err
			}
			_, err = io.out.Write(append(escapeJSONControls(b), '\n'))
			return err
		}
		tw := tabwriter.NewWriter(io.out, 0, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tTIME\tFILES\tADDED")
		for _, c := range list {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\n", c.ID, escapeControls(c.Name, false), c.Time.Local().Format("2006-01-02 15:04:05"), c.Files, c.Bytes)
		}
		return tw.Flush()
	})
}

// runCheckpointRm is `pi-sandbox checkpoint rm [flags] ID...`.
func runCheckpointRm(ctx context.Context, args []string, io stdio) int {
	f := newFlags("checkpoint rm", "[flags] ID...", io)
	f.about = "Removes checkpoints (an id, a unique prefix of one, or a name: the newest with it) and the\nstored contents no other checkpoint uses."
	rest, code, ok := f.parse(args)
	if !ok {
		return code
	}
	if len(rest) == 0 {
		return f.usageError("want the ID of a checkpoint")
	}
	return withSandbox(ctx, "checkpoint rm", f.cfg, io, func(sb *sandbox.Sandbox) error {
		for _, ref := range rest {
			if _, err := sb.RemoveCheckpoint(ctx, ref); err != nil {
				return err
			}
		}
		return nil
	})
}

// runCheckpointExport is `pi-sandbox checkpoint export [flags] ID > x.tar`.
func runCheckpointExport(ctx context.Context, args []string, io stdio) int {
	f := newFlags("checkpoint export", "[flags] ID > x.tar", io)
	f.about = "Writes a checkpoint (an id, a unique prefix of one, or a name: the newest with it) to stdout as a\ntar (PAX format; tar(1) reads it): directories, files and symbolic links with their modes, and\nthe checkpoint's name and exclude patterns. 'checkpoint import' takes it into another sandbox,\nof any backend. Each file's SHA-256 is checked as it is read from the store."
	rest, code, ok := f.parse(args)
	if !ok {
		return code
	}
	if len(rest) != 1 {
		return f.usageError("want the ID of one checkpoint")
	}
	if isTerminal(io.out) {
		return f.usageError("will not write a tar to a terminal: redirect stdout (checkpoint export %s > x.tar)", rest[0])
	}
	return withSandbox(ctx, "checkpoint export", f.cfg, io, func(sb *sandbox.Sandbox) error {
		bw := bufio.NewWriterSize(io.out, 256<<10)
		if _, err := sb.ExportCheckpoint(ctx, bw, rest[0]); err != nil {
			return err
		}
		return bw.Flush()
	})
}

// runCheckpointImport is `pi-sandbox checkpoint import [flags] [--name
// NAME] < x.tar`: it prints the new checkpoint's id.
func runCheckpointImport(ctx context.Context, args []string, io stdio) int {
	f := newFlags("checkpoint import", "[flags] [--name NAME] < x.tar", io)
	f.about = "Records the tar 'checkpoint export' wrote (read from stdin) as a new checkpoint of this\nsandbox's working directory and prints its id; the directory is not touched ('restore ID' makes\nit hold the checkpoint). A tar that is not such an export, a path that leaves the directory\n(absolute, ..), hard links and devices are refused and nothing is kept."
	name := f.String("name", "", "call the checkpoint `NAME` (default: the exported checkpoint's name)")
	rest, code, ok := f.parse(args)
	if !ok {
		return code
	}
	if len(rest) != 0 {
		return f.usageError("takes no arguments: the tar is read from stdin")
	}
	if isTerminal(io.in) {
		return f.usageError("reads a tar from stdin, which is a terminal: checkpoint import < x.tar")
	}
	return withSandbox(ctx, "checkpoint import", f.cfg, io, func(sb *sandbox.Sandbox) error {
		c, err := sb.ImportCheckpoint(ctx, bufio.NewReaderSize(io.in, 256<<10), *name)
		if err != nil {
			return err
		}
		fmt.Fprintln(io.out, c.ID)
		return nil
	})
}
