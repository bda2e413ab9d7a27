package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// grepPatterns are searched on a copy of Go's src tree by the grep tool
// (in-process, local backend) and by rg with pi's options: case-insensitive
// and non-ASCII patterns, one that matches nothing, and a plain literal.
var grepPatterns = []string{`(?i)func newreader`, `(?i)über`, `ÜBER|straße`, `(?i)xyzzy_nomatch`, `func NewReader`}

// grepGoSrcTarget is the ratio to rg every pattern should stay within.
const grepGoSrcTarget = 1.5

type grepRow struct {
	Pattern string  `json:"pattern"`
	Ours    stats   `json:"ours"`
	RG      stats   `json:"rg"`
	Ratio   float64 `json:"ratio"`
}

// grepGoSrc measures grepPatterns on the local backend. Calls alternate
// (ours, rg, ours, …) so that the load of a shared machine falls on both.
func grepGoSrc(ctx context.Context, o *options, p *progress, e *env) ([]grepRow, string) {
	rg, err := exec.LookPath("rg")
	if err != nil {
		return nil, "rg not installed"
	}
	src, err := goSrc(ctx)
	if err != nil {
		return nil, err.Error()
	}
	dir := filepath.Join(e.work, "gosrc")
	if _, err := os.Stat(dir); err != nil {
		p.step("%s: copying %s", e.name, src)
		if out, err := exec.CommandContext(ctx, "cp", "-r", src, dir).CombinedOutput(); err != nil {
			return nil, fmt.Sprintf("copy of %s: %v: %s", src, err, out)
		}
	}
	n := 5
	if o.quick {
		n = 3
	}
	var rows []grepRow
	for _, pat := range grepPatterns {
		args, _ := json.Marshal(map[string]any{"pattern": pat, "path": dir, "limit": 1000})
		ours := func() error {
			_, err := callTool(ctx, e.lp, "grep", string(args))
			if err != nil && strings.Contains(err.Error(), "No matches found") {
				err = nil
			}
			return err
		}
		theirs := func() error {
			cmd := exec.CommandContext(ctx, rg, "--no-config", "--json", "--line-number", "--color=never", "--hidden", "--", pat, ".")
			cmd.Dir, cmd.Stdout = dir, io.Discard
			if err := cmd.Run(); err != nil {
				if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
					return err
				}
			}
			return nil
		}
		p.step("%s: grep %s ×%d (and rg)", e.name, pat, n)
		var od, rd []time.Duration
		row := grepRow{Pattern: pat}
		for i := -1; i < n && ctx.Err() == nil; i++ { // -1: warm-up
			for _, c := range []struct {
				f  func() error
				ds *[]time.Duration
				st *stats
			}{{ours, &od, &row.Ours}, {theirs, &rd, &row.RG}} {
				t := time.Now()
				if err := c.f(); err != nil {
					c.st.Errs++
					c.st.Err = err.Error()
					continue
				}
				if i >= 0 {
					*c.ds = append(*c.ds, time.Since(t))
				}
			}
		}
		row.Ours, row.RG = withErrs(summarize(od), row.Ours), withErrs(summarize(rd), row.RG)
		row.Ratio = ratio(row.Ours.P50Ms, row.RG.P50Ms)
		rows = append(rows, row)
	}
	return rows, ""
}

func withErrs(s, e stats) stats {
	s.Errs, s.Err = e.Errs, e.Err
	return s
}

// goSrc is $GOROOT/src of the go command on PATH (or of $GOROOT).
func goSrc(ctx context.Context) (string, error) {
	root := os.Getenv("GOROOT")
	if root == "" {
		out, err := exec.CommandContext(ctx, "go", "env", "GOROOT").Output()
		if err != nil {
			return "", fmt.Errorf("go env GOROOT: %v (set GOROOT)", err)
		}
		root = strings.TrimSpace(string(out))
	}
	src := filepath.Join(root, "src")
	if _, err := os.Stat(src); err != nil {
		return "", err
	}
	return src, nil
}

// grepTargets are the targets of the grep rows.
func grepTargets(res *results) []targetResult {
	var ts []targetResult
	for _, r := range res.Grep {
		t := fmt.Sprintf("local grep `%s` on Go's src p50 ≤ %g× `rg` (same options)", cellText(r.Pattern), grepGoSrcTarget)
		ok := r.Ours.N > 0 && r.RG.N > 0 && r.Ratio > 0
		v, st := "", "not measured"
		if ok {
			v = fmt.Sprintf("%.0f ms vs %.0f ms = %.2f×", r.Ours.P50Ms, r.RG.P50Ms, r.Ratio)
			st = verdict(r.Ratio <= grepGoSrcTarget)
		} else if r.Ours.Err != "" || r.RG.Err != "" {
			v = strings.TrimSpace(r.Ours.Err + " " + r.RG.Err)
		}
		ts = append(ts, targetResult{t, v, st})
	}
	return ts
}

// grepMarkdown is the report's section on the grep rows.
func grepMarkdown(res *results) string {
	if len(res.Grep) == 0 && res.GrepNote == "" {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## grep on Go's source tree\n\n")
	if res.GrepNote != "" {
		fmt.Fprintf(&b, "Not measured: %s\n", cellText(res.GrepNote))
		return b.String()
	}
	b.WriteString("The grep tool in-process on the local backend against `rg --no-config --json --line-number --color=never --hidden -- PATTERN .` (pi's options) on a copy of `$GOROOT/src`, calls alternating; p50 / p99 ms.\n\n")
	b.WriteString("| pattern | grep tool | rg | ours ÷ rg |\n|---|---|---|---|\n")
	for _, r := range res.Grep {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", cellText(r.Pattern), statCell(&r.Ours), statCell(&r.RG), xr(r.Ratio))
	}
	return b.String()
}
