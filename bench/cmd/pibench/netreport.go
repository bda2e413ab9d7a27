package main

import (
	"fmt"
	"strings"
)

// netTargets are the network rows' targets.
func netTargets(res *results) []targetResult {
	if res.Net == nil {
		return nil
	}
	var ts []targetResult
	if res.Net.Err != "" && len(res.Net.Rows) == 0 {
		return []targetResult{{"network: section", res.Net.Err, "not measured"}}
	}
	for _, r := range res.Net.Rows {
		ts = append(ts, targetResult{"network: " + r.Name + " " + r.Target, netValue(&r), r.Status})
	}
	return ts
}

func netValue(r *netRow) string {
	if r.N == 0 {
		return r.Err
	}
	switch r.Unit {
	case "ms":
		return fmt.Sprintf("p50 %.2f ms, p95 %.2f ms vs %.2f ms = %.2f×", r.Value, r.P95, r.BaseValue, r.Ratio)
	case "MB/s":
		return fmt.Sprintf("%.1f MB/s vs %.1f MB/s = %.2f×", r.Value, r.BaseValue, r.Ratio)
	}
	return fmt.Sprintf("%.1f %s", r.Value, r.Unit)
}

// netMarkdown is the report's network section.
func netMarkdown(res *results) string {
	ns := res.Net
	if ns == nil {
		return ""
	}
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("\n## Network (docker runc, `%s`)\n\n", ns.Image)
	if ns.Err != "" {
		w("Error: %s\n\n", cellText(ns.Err))
	}
	w("Each row's baseline is measured in the same run, interleaved with it (latency rows alternate one sample each, after one warm-up of each). ")
	w("Tunnel rows: busybox httpd in both containers, Go's net/http client on the host, a new TCP connection per request (no keep-alive); the `port` process is the CLI users run, started once for rows 1, 2 and the RSS row. ")
	w("Egress rows: busybox wget in the `up` sandbox (no network), through the session's proxy (`Policy.Network.Allow` = the server's `127.0.0.1:PORT`) to a Go server on the host's loopback, against wget to the httpd on the target's own loopback; each sample is timed on the host around a bash tool call.\n\n")
	if len(ns.Rows) > 0 {
		w("| op | n | value | p95 ms | baseline | baseline value | baseline p95 ms | ratio | target | status |\n|---|---|---|---|---|---|---|---|---|---|\n")
		for _, r := range ns.Rows {
			v := f2(r.Value) + " " + r.Unit
			if r.Errs > 0 {
				v += fmt.Sprintf(" (%d errors: %s)", r.Errs, cellText(r.Err))
			}
			bv := "–"
			if r.BaseValue != 0 {
				bv = f2(r.BaseValue) + " " + r.Unit
			}
			w("| %s | %d | %s | %s | %s | %s | %s | %s | %s | **%s** |\n", r.Op, r.N, v, f2(r.P95), r.Baseline, bv, f2(r.BaseP95), xr(r.Ratio), r.Target, r.Status)
		}
	}
	for _, n := range ns.Notes {
		w("\nNote: %s\n", cellText(n))
	}
	return b.String()
}
