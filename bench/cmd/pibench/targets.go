package main

import (
	"fmt"
	"strings"
)

// evalTargets checks the helper's speed targets: ratios against baselines measured
// in the same run, absolute figures where the issue gives them.
func evalTargets(res *results) []targetResult {
	var ts []targetResult
	add := func(target string, measured bool, value string, ok bool) {
		st := "not measured"
		if measured {
			st = verdict(ok)
		}
		ts = append(ts, targetResult{target, value, st})
	}
	// lat is the in-process helper p50 of op on backend b, and its ratio to
	// the op's baseline.
	lat := func(b, op string) (*latencyRow, bool) {
		bs := backend(res, b)
		if bs == nil {
			return nil, false
		}
		r := findRow(bs, op)
		if r == nil || r.InProcess.N == 0 {
			return r, false
		}
		return r, true
	}
	abs := func(b, op string, limit float64) {
		r, ok := lat(b, op)
		v := ""
		if ok {
			v = fmt.Sprintf("%.2f ms", r.InProcess.P50Ms)
			if r.NoHelper != nil && r.NoHelper.N > 0 {
				v += fmt.Sprintf(" (no helper %.2f ms)", r.NoHelper.P50Ms)
			}
		}
		add(fmt.Sprintf("%s in-process %s p50 ≤ %g ms", b, op, limit), ok, v, ok && r.InProcess.P50Ms <= limit)
	}
	rel := func(b, op string, limit float64) {
		r, ok := lat(b, op)
		ok = ok && r.InRatio > 0
		v := ""
		if ok {
			v = fmt.Sprintf("%.2f ms vs %.2f ms (%s) = %.3f×", r.InProcess.P50Ms, r.Base.P50Ms, r.Baseline, r.InRatio)
			if r.NHRatio > 0 {
				v += fmt.Sprintf("; no helper %.3f×", r.NHRatio)
			}
		}
		base := "baseline"
		if r != nil && r.Baseline != "" {
			base = "`" + r.Baseline + "`"
		}
		add(fmt.Sprintf("%s in-process %s p50 ≤ %g× %s", b, op, limit, base), ok, v, ok && r.InRatio <= limit)
	}
	conc := func(b string) {
		bs := backend(res, b)
		ok := bs != nil && bs.Concurrency != nil && bs.Concurrency.Err == "" && bs.Concurrency.Ratio > 0
		v := ""
		if ok {
			c := bs.Concurrency
			v = fmt.Sprintf("%.0f ms vs %.0f ms = %.2f×", c.AllMs, c.OneMs, c.Ratio)
			if n := bs.ConcurrencyNH; n != nil && n.Ratio > 0 {
				v += fmt.Sprintf("; no helper %.2f×", n.Ratio)
			}
		} else if bs != nil && bs.Concurrency != nil {
			v = bs.Concurrency.Err
		}
		add(b+" 32 parallel `sleep 0.5` ≤ 1.3× one call", ok, v, ok && bs.Concurrency.Ratio <= 1.3)
	}

	abs("docker", "read 1 KiB", 2)
	rel("docker", "read 1 KiB", 0.05)
	abs("docker", "write 1 KiB", 3)
	abs("docker", "edit one line", 3)
	abs("docker", "ls 100 entries", 3)
	abs("docker", "bash true", 8)
	rel("docker", "bash true", 0.1)
	conc("docker")
	rel("docker", "grep 10,000 files", 1.5)

	rel("ssh", "bash true", 0.5)
	slow := func() *slowRCStats {
		if bs := backend(res, "ssh"); bs != nil {
			return bs.SlowRC
		}
		return nil
	}()
	{
		ok := slow != nil && slow.Err == "" && slow.Helper.N > 0
		v := ""
		if ok {
			v = fmt.Sprintf("p50 %.2f ms, p99 %.2f ms, max %.2f ms over %d calls (no helper p50 %.0f ms; %s p50 %.0f ms)",
				slow.Helper.P50Ms, slow.Helper.P99Ms, slow.Helper.MaxMs, slow.Helper.N, slow.NoHelper.P50Ms, slow.Baseline, slow.Base.P50Ms)
		} else if slow != nil {
			v = slow.Err
		}
		add("ssh, ~/.bashrc sleeps 300 ms: every bash true after the first ≤ 10 ms (max)", ok, v, ok && slow.Helper.MaxMs <= 10)
	}
	conc("ssh")

	abs("local", "bash true", 6)
	abs("local", "read 1 KiB", 0.3)

	for _, b := range []string{"docker", "ssh"} {
		bs := backend(res, b)
		var cli *throughputRow
		if bs != nil {
			for i := range bs.Throughput {
				if bs.Throughput[i].Via == "CLI pi-sandbox tool bash" {
					cli = &bs.Throughput[i]
				}
			}
		}
		ok := cli != nil && cli.Err == ""
		v, rv := "", ""
		if ok {
			v = fmt.Sprintf("%.0f MB/s vs %.0f MB/s (%s) = %.2f×", cli.MBps, cli.BaseMBps, cli.Baseline, cli.Ratio)
			rv = fmt.Sprintf("%.0f MiB", cli.PeakRSSMiB)
		} else if cli != nil {
			v = cli.Err
		}
		add(b+" 1 GiB of bash output through `pi-sandbox tool` ≥ 1.0× same-run throughput", ok && cli.Ratio > 0, v, ok && cli.Ratio >= 1.0)
		add(b+" 1 GiB through `pi-sandbox tool`: CLI peak RSS ≤ 64 MiB", ok && cli.PeakRSSMiB > 0, rv, ok && cli.PeakRSSMiB <= 64)
	}

	first := func(label string, rows []firstCallRow) {
		var r *firstCallRow
		for i := range rows {
			if rows[i].Path == "helper" {
				r = &rows[i]
			}
		}
		ok := r != nil && r.Stats.N > 0 && r.Base.N > 0
		v := ""
		if ok {
			v = fmt.Sprintf("New + first call %.0f ms vs %s %.0f ms: +%.0f ms", r.Stats.P50Ms, r.Baseline, r.Base.P50Ms, r.OverMs)
			for _, x := range rows {
				if x.Path == "no helper" && x.Stats.N > 0 {
					v += fmt.Sprintf(" (no helper %.0f ms)", x.Stats.P50Ms)
				}
			}
		} else if r != nil {
			v = r.Err
		}
		add(label+" first call of a session (New + bash true, p50) ≤ one process + 100 ms", ok, v, ok && r.OverMs <= 100)
	}
	if bs := backend(res, "docker"); bs != nil {
		first("docker", bs.First)
	}
	if bs := backend(res, "ssh"); bs != nil {
		first("ssh", bs.First)
	}
	if slow != nil {
		first("ssh (slow ~/.bashrc)", slow.First)
	}

	var dsv *serveStats
	if bs := backend(res, "docker"); bs != nil {
		dsv = bs.Serve
	}
	serveRel := func(label string, sv *serveStats, key string, limit float64) {
		var r *serveOp
		if sv != nil {
			for i := range sv.Ops {
				if sv.Ops[i].Key == key {
					r = &sv.Ops[i]
				}
			}
		}
		ok := r != nil && r.Stats.N > 0 && r.Ratio > 0
		v := ""
		if ok {
			v = fmt.Sprintf("%.2f ms vs %.2f ms (%s) = %.3f×", r.Stats.P50Ms, r.Base.P50Ms, r.Baseline, r.Ratio)
		} else if r != nil {
			v = r.Stats.Err
		} else if sv != nil {
			v = sv.Err
		}
		name := key
		if r != nil {
			name = r.Op
		}
		base := ""
		if r != nil {
			base = " `" + r.Baseline + "`"
		}
		add(fmt.Sprintf("%s serve session: %s p50 ≤ %g×%s", label, name, limit, base), ok, v, ok && r.Ratio <= limit)
	}
	serveRel("docker", dsv, "read1k", 0.05)
	serveRel("docker", dsv, "true", 0.15)
	{
		ok := dsv != nil && dsv.ParallelMs > 0 && dsv.ParallelEr == ""
		v := ""
		if dsv != nil {
			v = fmt.Sprintf("%.0f ms", dsv.ParallelMs)
			if dsv.ParallelEr != "" {
				v += "; error: " + dsv.ParallelEr
			}
		}
		add("docker serve session: 16 parallel `sleep 0.5` ≤ 1.0 s", ok, v, ok && dsv.ParallelMs <= 1000)
	}
	var ssv *serveStats
	if slow != nil {
		ssv = slow.Serve
	}
	serveRel("ssh (slow ~/.bashrc)", ssv, "true", 0.2)
	{
		ok := dsv != nil && dsv.Restart != ""
		v := ""
		if ok {
			v = dsv.Restart
		}
		add("docker serve session: after `docker restart`, the next call works", ok, v, ok && strings.HasPrefix(dsv.Restart, "ok"))
	}
	return ts
}
