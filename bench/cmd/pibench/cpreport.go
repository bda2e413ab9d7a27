package main

import (
	"fmt"
	"strings"
)

// cpTargets are the checkpoint rows' targets.
func cpTargets(res *results) []targetResult {
	if cs := res.Checkpoints; cs != nil {
		return rowTargets("checkpoints", cs.Err, cs.Rows)
	}
	return nil
}

// rowTargets are a section's latency rows as targets (each row's Name
// starts with the section); a section that failed before any row is one
// target not measured.
func rowTargets(section, err string, rows []netRow) []targetResult {
	if err != "" && len(rows) == 0 {
		return []targetResult{{section + ": section", err, "not measured"}}
	}
	var ts []targetResult
	for _, r := range rows {
		ts = append(ts, targetResult{r.Name + " " + r.Target, netValue(&r), r.Status})
	}
	return ts
}

// rowTable writes latency rows against their baselines as a table.
func rowTable(w func(string, ...any), rows []netRow) {
	if len(rows) == 0 {
		return
	}
	w("| op | n | p50 ms | p95 ms | baseline | baseline p50 ms | baseline p95 ms | ratio | target | status |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		v := f2(r.Value)
		if r.Errs > 0 {
			v += fmt.Sprintf(" (%d errors: %s)", r.Errs, cellText(r.Err))
		}
		w("| %s | %d | %s | %s | %s | %s | %s | %.2f× | %s | %s |\n", r.Op, r.N, v, f2(r.P95), r.Baseline, f2(r.BaseValue), f2(r.BaseP95), r.Ratio, r.Target, r.Status)
	}
}

// cpMarkdown is the report's checkpoints section.
func cpMarkdown(res *results) string {
	cs := res.Checkpoints
	if cs == nil {
		return ""
	}
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("\n## Checkpoints (local, a copy of Go's `src`: %d files)\n\n", cs.Files)
	if cs.Err != "" {
		w("Error: %s\n\n", cellText(cs.Err))
	}
	w("Each sample runs the `pi-sandbox` CLI (process start included) on one copy and the git command on an identical copy (`git` with gc off), alternating, %d samples per row; each change round appends a line to the same 10 `.go` files in both. ", cs.Samples)
	w("The first checkpoint gets a fresh store per sample, git a fresh `git init` (not timed). Restore records the working directory first (`pre-restore-N`), as it always does. ")
	w("The fork row (docker) forks a checkpoint of a small tree from a busybox `up` sandbox into sandboxes claimed from a pool filled to 9 before each sample (not timed), 8 against 1, the CLI's wall time; the forks are removed after each sample.\n\n")
	rowTable(w, cs.Rows)
	if cs.CLIRSS > 0 {
		w("\nPeak RSS during the first checkpoint: the CLI (on local the checkpoint runs in it, as it runs in the helper elsewhere) %.1f MiB; git add + commit %.1f MiB.\n", cs.CLIRSS, cs.GitRSS)
	}
	return b.String()
}
