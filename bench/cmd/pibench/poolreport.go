package main

import (
	"fmt"
	"strings"
)

// poolTargets are the pools rows' targets.
func poolTargets(res *results) []targetResult {
	if res.Pools == nil {
		return nil
	}
	var ts []targetResult
	for _, r := range res.Pools.Rows {
		ts = append(ts, targetResult{"pools: " + r.Op + " " + r.Target, poolValue(r), r.Status})
	}
	return append(ts, k8sPoolTargets(res.Pools.K8s)...)
}

// poolValue is a pools row's figures for the targets table.
func poolValue(r poolRow) string {
	if r.Stats.N == 0 {
		return r.Stats.Err
	}
	return fmt.Sprintf("p50 %.1f ms, p95 %.1f ms vs %.1f ms = %.3f×", r.Stats.P50Ms, r.P95Ms, r.BaseMs, r.Ratio)
}

// poolTable is the markdown table of pools rows.
func poolTable(rows []poolRow) string {
	var b strings.Builder
	b.WriteString("| op | n | p50 ms | p95 ms | baseline | baseline p50 ms | ratio | target | status |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		p50 := f2(r.Stats.P50Ms)
		if r.Stats.Errs > 0 {
			p50 += fmt.Sprintf(" (%d errors: %s)", r.Stats.Errs, cellText(r.Stats.Err))
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s | **%s** |\n", r.Op, r.Stats.N, p50, f2(r.P95Ms), r.Baseline, f2(r.BaseMs), xr(r.Ratio), r.Target, r.Status)
	}
	return b.String()
}

// poolMarkdown is the report's pools section.
func poolMarkdown(res *results) string {
	ps := res.Pools
	if ps == nil {
		return ""
	}
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("\n## Pools (`%s`)\n\n", ps.Image)
	if ps.Err != "" {
		w("Error: %s\n\n", cellText(ps.Err))
	}
	w("Baseline `docker run --rm --network none %s true`: %s ms p50 / p99, p95 %s ms (n=%d). The claimed sandbox is removed after the clock stops.\n\n", ps.Image, statCell(&ps.Base), f2(ps.BaseP95), ps.Base.N)
	if len(ps.Rows) > 0 {
		b.WriteString(poolTable(ps.Rows))
	}
	b.WriteString(phasesLine("Of a Go API claim (the same steps as `pool.Claim`, one by one)", ps.Phases))
	if d := ps.Density; d != nil {
		w("\nDensity (reported): %d idle members filled in %.1f s", d.Members, d.FillSeconds)
		if d.MemMeasured > 0 {
			w("; cgroup memory per member %.1f MiB average, %.1f MiB max (%d read)", d.MemMiBAvg, d.MemMiBMax, d.MemMeasured)
		}
		if d.ShimMeasured > 0 {
			w("; containerd-shim RSS on the host %.1f MiB per member (%d attributed)", d.ShimRSSMiB, d.ShimMeasured)
		}
		w(".\n")
		if d.Note != "" {
			w("\nNote: %s\n", cellText(d.Note))
		}
		if d.Err != "" {
			w("\nError: %s\n", cellText(d.Err))
		}
	}
	for _, n := range ps.Notes {
		w("\nNote: %s\n", cellText(n))
	}
	b.WriteString(k8sPoolMarkdown(ps.K8s))
	return b.String()
}

// phasesLine is the line of a claim's steps, p50 / p99 ms each ("" with
// none).
func phasesLine(title string, phases []extraRow) string {
	if len(phases) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s, p50 / p99 ms:", title)
	for i, x := range phases {
		sep := ","
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(&b, "%s %s %s", sep, x.Name, statCell(&x.stats))
	}
	b.WriteString(".\n")
	return b.String()
}
