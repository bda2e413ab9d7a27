package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

const (
	gib         = 1 << 30
	mib64       = 64 << 20
	yesLine     = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	rssChildCmd = "__rss-child"
)

// emitCmd prints n bytes of 63-byte lines.
func emitCmd(n int64) string { return fmt.Sprintf("yes %s | head -c %d", yesLine, n) }

func mbps(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / 1e6 / d.Seconds()
}

func throughput(ctx context.Context, o *options, p *progress, e *env) []throughputRow {
	var rows []throughputRow
	emit := emitCmd(gib)
	// Baseline: the same bytes through the plain transport into this process.
	p.step("%s: 1 GiB baseline", e.name)
	var baseName string
	var baseF func() (int64, error)
	switch e.name {
	case "local":
		baseName = "sh -c (pipe to this process)"
		baseF = func() (int64, error) { return runExt(ctx, nil, "sh", "-c", emit) }
	case "docker":
		baseName = "docker exec sh -c"
		baseF = func() (int64, error) { return runExt(ctx, nil, "docker", e.dockerExec(false, "sh", "-c", emit)...) }
	case "ssh":
		baseName = "ssh (ControlMaster)"
		baseF = func() (int64, error) {
			return runExt(ctx, nil, "ssh", e.sshArgs(controlArgs(e), emit)...)
		}
	}
	var baseMBps float64
	if baseF != nil {
		t := time.Now()
		n, err := baseF()
		d := time.Since(t)
		r := throughputRow{What: "bash 1 GiB output", Via: "baseline: " + baseName, Bytes: n, Seconds: d.Seconds(), MBps: mbps(n, d)}
		if err != nil {
			r.Err = err.Error()
		} else if n != gib {
			r.Err = fmt.Sprintf("got %d bytes", n)
		} else {
			baseMBps = r.MBps
		}
		rows = append(rows, r)
	}
	withBase := func(r throughputRow) throughputRow {
		if r.Err == "" && baseMBps > 0 {
			r.Baseline, r.BaseMBps, r.Ratio = baseName, baseMBps, ratio(r.MBps, baseMBps)
		}
		return r
	}
	// The bash tool in a child process (its peak RSS is this call's alone);
	// -quick measures only the CLI, the figure with a speed target.
	modes := []string{"tool"}
	if o.quick {
		modes = nil
	}
	for _, mode := range modes {
		via := "in-process bash tool (child process)"
		if mode == "run" {
			via = "in-process ops Run, no tools (child process)"
		}
		p.step("%s: 1 GiB %s", e.name, via)
		rows = append(rows, withBase(childThroughput(ctx, o, e, mode, via)))
	}
	if e.cli != nil {
		p.step("%s: 1 GiB through the CLI", e.name)
		t := time.Now()
		var hwm atomic.Int64
		_, err := cliToolWatch(ctx, o, e, "bash", jsonArgs(map[string]any{"command": emit}), func(pid int) { watchHWM(ctx, pid, &hwm) })
		d := time.Since(t)
		r := throughputRow{What: "bash 1 GiB output", Via: "CLI pi-sandbox tool bash", Bytes: gib, Seconds: d.Seconds(), MBps: mbps(gib, d)}
		r.PeakRSSMiB = float64(hwm.Load()) / 1024
		if err != nil {
			r.Err = err.Error()
		}
		rows = append(rows, withBase(r))
	}
	rows = append(rows, fileThroughput(ctx, o, p, e)...)
	return rows
}

// childThroughput runs 1 GiB of bash output in a fresh child process, so
// its VmHWM is the peak resident memory of exactly this call.
func childThroughput(ctx context.Context, o *options, e *env, mode, via string) throughputRow {
	r := throughputRow{What: "bash 1 GiB output", Via: via, Bytes: gib}
	spec, _ := json.Marshal(e.spec)
	exe, _ := os.Executable()
	cmd := exec.CommandContext(ctx, exe, rssChildCmd, string(spec), mode, strconv.Itoa(gib))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		r.Err = fmt.Sprintf("child: %v", err)
		return r
	}
	var cr childResult
	if err := json.Unmarshal(out, &cr); err != nil {
		r.Err = fmt.Sprintf("child: %v: %s", err, out)
		return r
	}
	r.Seconds, r.MBps, r.PeakRSSMiB, r.Err = cr.Seconds, mbps(gib, time.Duration(cr.Seconds*float64(time.Second))), float64(cr.VmHWMKiB)/1024, cr.Err
	return r
}

type childResult struct {
	Seconds  float64 `json:"seconds"`
	VmHWMKiB int64   `json:"vmhwmKiB"`
	OpenKiB  int64   `json:"openKiB"`
	Err      string  `json:"error,omitempty"`
}

// rssChild is `pibench __rss-child SPEC MODE BYTES`.
func rssChild(ctx context.Context, args []string) int {
	var cr childResult
	defer func() {
		b, _ := json.Marshal(cr)
		fmt.Printf("%s\n", b)
	}()
	if len(args) != 3 {
		cr.Err = "usage: __rss-child SPEC MODE BYTES"
		return 2
	}
	var spec childSpec
	if err := json.Unmarshal([]byte(args[0]), &spec); err != nil {
		cr.Err = err.Error()
		return 1
	}
	n, _ := strconv.ParseInt(args[2], 10, 64)
	e := &env{name: spec.Backend}
	b, err := openBackend(ctx, spec)
	if err != nil {
		cr.Err = err.Error()
		return 1
	}
	e.raw = b
	defer b.Close()
	if err := e.wrap(ctx); err != nil {
		cr.Err = err.Error()
		return 1
	}
	cr.OpenKiB = vmHWM()
	t := time.Now()
	if args[1] == "run" {
		var cw countWriter
		err = b.Run(ctx, &ops.Cmd{Command: emitCmd(n), Output: &cw})
		if err == nil && cw.n != n {
			err = fmt.Errorf("got %d bytes", cw.n)
		}
	} else {
		var r *loop.Result
		r, err = callTool(ctx, e.lp, "bash", jsonArgs(map[string]any{"command": emitCmd(n)}))
		if err == nil && !strings.Contains(resultText(r)+fmt.Sprint(r.Details), "pi-bash-") {
			err = fmt.Errorf("no spill file in the result: %s", resultText(r))
		}
	}
	cr.Seconds = time.Since(t).Seconds()
	cr.VmHWMKiB = vmHWM()
	if err != nil {
		cr.Err = err.Error()
	}
	return 0
}

// watchHWM samples the VmHWM of process pid into max until it exits. The
// rusage of a child (ru_maxrss) cannot serve: a child started with vfork
// is charged the parent's resident set until its exec, so it reported this
// benchmark's own size. A growth in the last sampling interval is missed.
func watchHWM(ctx context.Context, pid int, max *atomic.Int64) {
	go func() {
		for ctx.Err() == nil {
			v := vmHWMOf(strconv.Itoa(pid))
			if v == 0 {
				return // gone
			}
			if v > max.Load() {
				max.Store(v)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
}

// vmHWM is this process's peak resident set size in KiB.
func vmHWM() int64 { return vmHWMOf("self") }

// vmHWMOf is process pid's peak resident set size in KiB (0: none).
func vmHWMOf(pid string) int64 {
	f, err := os.Open("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// fileThroughput writes and reads a 64 MiB file through the backend's FS
// (what write/read and spill files use) and through the baseline transport.
func fileThroughput(ctx context.Context, o *options, p *progress, e *env) []throughputRow {
	data := make([]byte, mib64)
	for i := range data {
		data[i] = yesLine[i%len(yesLine)]
	}
	reps := 3
	if o.quick {
		reps = 1
	}
	med := func(f func() (int64, error)) (time.Duration, error) {
		var ds []time.Duration
		for range reps {
			t := time.Now()
			n, err := f()
			if err != nil {
				return 0, err
			}
			if n != mib64 {
				return 0, fmt.Errorf("moved %d bytes, want %d", n, mib64)
			}
			ds = append(ds, time.Since(t))
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2], nil
	}
	ours := e.path("lat/big-ours.bin")
	base := e.path("lat/big-base.bin")
	type pair struct {
		what, baseName string
		ourF, baseF    func() (int64, error)
	}
	var write, read pair
	write.what, read.what = "write 64 MiB file", "read 64 MiB file"
	write.ourF = func() (int64, error) { return mib64, e.raw.WriteFile(ctx, ours, data, 0o644) }
	read.ourF = func() (int64, error) {
		rc, err := e.raw.Open(ctx, ours)
		if err != nil {
			return 0, err
		}
		defer rc.Close()
		return io.Copy(io.Discard, rc)
	}
	switch e.name {
	case "local":
		write.baseName, read.baseName = "os.WriteFile", "os.Open+io.Copy"
		write.baseF = func() (int64, error) { return mib64, os.WriteFile(base, data, 0o644) }
		read.baseF = func() (int64, error) {
			f, err := os.Open(base)
			if err != nil {
				return 0, err
			}
			defer f.Close()
			return io.Copy(io.Discard, f)
		}
	case "docker":
		write.baseName, read.baseName = "docker exec -i sh -c 'cat >'", "docker exec cat"
		write.baseF = func() (int64, error) {
			_, err := runExt(ctx, data, "docker", e.dockerExec(true, "sh", "-c", "cat > "+base)...)
			return mib64, err
		}
		read.baseF = func() (int64, error) { return runExt(ctx, nil, "docker", e.dockerExec(false, "cat", base)...) }
	case "ssh":
		write.baseName, read.baseName = "ssh (ControlMaster) 'cat >'", "ssh (ControlMaster) cat"
		write.baseF = func() (int64, error) {
			_, err := runExt(ctx, data, "ssh", e.sshArgs(controlArgs(e), "cat > "+base)...)
			return mib64, err
		}
		read.baseF = func() (int64, error) {
			return runExt(ctx, nil, "ssh", e.sshArgs(controlArgs(e), "cat "+base)...)
		}
	}
	var rows []throughputRow
	for _, pr := range []pair{write, read} {
		p.step("%s: %s", e.name, pr.what)
		r := throughputRow{What: pr.what, Via: "in-process ops FS (" + fsVia(e) + ")", Bytes: mib64}
		d, err := med(pr.ourF)
		if err != nil {
			r.Err = err.Error()
		} else {
			r.Seconds, r.MBps = d.Seconds(), mbps(mib64, d)
		}
		if pr.baseF != nil {
			bd, berr := med(pr.baseF)
			if berr == nil {
				r.Baseline, r.BaseMBps = pr.baseName, mbps(mib64, bd)
				r.Ratio = ratio(r.MBps, r.BaseMBps)
			} else {
				r.Baseline = pr.baseName + ": " + berr.Error()
			}
		}
		rows = append(rows, r)
	}
	return rows
}

func fsVia(e *env) string {
	if e.raw.Info().Has("helper") {
		return "helper"
	}
	switch e.name {
	case "docker":
		return "exec cat / temp+mv"
	case "ssh":
		return "SFTP"
	}
	return "os"
}

// concurrency compares one bash call with 32 in one parallel batch.
func concurrency(ctx context.Context, p *progress, e *env, reps int) *concurrencyRow {
	const calls = 32
	command := "sleep 0.5"
	row := &concurrencyRow{Calls: calls, Command: command}
	p.step("%s: %d parallel bash calls", e.name, calls)
	batch := func(n int) (time.Duration, error) {
		tcs := make([]loop.ToolCall, n)
		for i := range tcs {
			tcs[i] = loop.ToolCall{ID: fmt.Sprintf("c%d", i), Name: "bash", Arguments: json.RawMessage(jsonArgs(map[string]any{"command": command}))}
		}
		t := time.Now()
		bctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		b := e.lp.RunBatch(bctx, nil, tcs, nil)
		d := time.Since(t)
		for _, r := range b.Results {
			if r.Result.IsError {
				return d, fmt.Errorf("%s", resultText(r.Result))
			}
		}
		return d, nil
	}
	var ones, alls []time.Duration
	for range reps {
		d1, err := batch(1)
		if err != nil {
			row.Err = err.Error()
			return row
		}
		dn, err := batch(calls)
		if err != nil {
			row.Err = err.Error()
			return row
		}
		ones, alls = append(ones, d1), append(alls, dn)
	}
	row.OneMs, row.AllMs = summarize(ones).P50Ms, summarize(alls).P50Ms
	row.Ratio = ratio(row.AllMs, row.OneMs)
	return row
}
