package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/checkpoint"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
)

func init() {
	register("diff", &command{summary: "what changed since a checkpoint (a patch, --stat, --name-status, --json)", run: runDiff})
	register("restore", &command{summary: "make the working directory a checkpoint again", run: runRestore})
}

// diffJSON is `diff --json`.
type diffJSON struct {
	From    *ops.CheckpointInfo    `json:"from"`
	To      *ops.CheckpointInfo    `json:"to"` // null: the workspace now
	Changes []ops.CheckpointChange `json:"changes"`
}

// runDiff is `pi-sandbox diff [flags] [FROM [TO]]`.
func runDiff(ctx context.Context, args []string, io stdio) int {
	f := newFlags("diff", "[flags] [FROM [TO]] [--stat|--name-status|--json]", io)
	f.about = "Shows what changed from checkpoint FROM (default: the latest) to checkpoint TO (default: the\nworking directory now), computed in the target: a unified patch git apply accepts (binary files\nas \"Binary files ... differ\"), git's --stat, --name-status (every changed path, directories\ntoo, with a trailing /) or --json. With no checkpoint yet it says so and exits 1."
	stat := f.Bool("stat", false, "a diffstat")
	nameStatus := f.Bool("name-status", false, "one line per changed path: A, D, M or T, a tab, the path")
	asJSON := f.Bool("json", false, "one JSON object: from, to, changes")
	rest, code, ok := f.parse(args)
	if !ok {
		return code
	}
	if len(rest) > 2 {
		return f.usageError("takes at most FROM and TO")
	}
	n := 0
	for _, b := range []bool{*stat, *nameStatus, *asJSON} {
		if b {
			n++
		}
	}
	if n > 1 {
		return f.usageError("--stat, --name-status and --json exclude each other")
	}
	from, to := "", ""
	if len(rest) > 0 {
		from = rest[0]
	}
	if len(rest) > 1 {
		to = rest[1]
	}
	return withSandbox(ctx, "diff", f.cfg, io, func(sb *sandbox.Sandbox) error {
		if !*nameStatus && !*asJSON {
			w := bufio.NewWriter(io.out)
			if err := sb.WritePatch(ctx, w, from, to, *stat); err != nil {
				return err
			}
			return w.Flush()
		}
		d, err := sb.Diff(ctx, from, to)
		if err != nil {
			return err
		}
		if *asJSON {
			if d.Changes == nil {
				d.Changes = []ops.CheckpointChange{}
			}
			b, err := json.Marshal(diffJSON{From: d.From, To: d.To, Changes: d.Changes})
			if err != nil {
				return err
			}
			_, err = io.out.Write(append(escapeJSONControls(b), '\n'))
			return err
		}
		w := bufio.NewWriter(io.out)
		for _, c := range d.Changes {
			p := checkpoint.QuotePath(c.Path)
			if (c.Old != nil && c.Old.Type == "dir" && c.Status == "D") || (c.New != nil && c.New.Type == "dir" && c.Status != "D") {
				p = checkpoint.QuotePath(c.Path + "/")
			}
			fmt.Fprintf(w, "%s\t%s\n", c.Status, p)
		}
		return w.Flush()
	})
}

// runRestore is `pi-sandbox restore [flags] ID`: it prints the id of the
// checkpoint of the working directory made first (pre-restore-N).
func runRestore(ctx context.Context, args []string, io stdio) int {
	f := newFlags("restore", "[flags] ID", io)
	f.about = "Makes the working directory checkpoint ID (an id, a unique prefix of one, or a name: the newest\nwith it) exactly: added files removed, changed ones reverted, deleted ones recreated, modes,\nlinks and empty directories as recorded; paths the checkpoint excluded are left alone. It first\nrecords the working directory as a checkpoint named pre-restore-N and prints its id: restoring\nthat undoes the restore."
	rest, code, ok := f.parse(args)
	if !ok {
		return code
	}
	if len(rest) != 1 {
		return f.usageError("want the ID of one checkpoint")
	}
	return withSandbox(ctx, "restore", f.cfg, io, func(sb *sandbox.Sandbox) error {
		c, pre, err := sb.Restore(ctx, rest[0])
		if err != nil {
			return err
		}
		fmt.Fprintln(io.out, pre.ID)
		fmt.Fprintf(io.err, "pi-sandbox restore: restored %s; the working directory before it is %s (%s)\n", c.ID, pre.ID, pre.Name)
		return nil
	})
}
