package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"
)

// results is results.json.
type results struct {
	Date     string          `json:"date"`
	Host     string          `json:"host"`
	Quick    bool            `json:"quick"`
	N        int             `json:"inProcessCalls"`
	CLIN     int             `json:"cliCalls"`
	Backends []*backendStats `json:"backends"`
	Targets  []targetResult  `json:"targets"`
	Seconds  float64         `json:"seconds"`
	// Grep is grep on Go's source tree against rg (local backend).
	Grep     []grepRow `json:"grepGoSrc,omitempty"`
	GrepNote string    `json:"grepGoSrcNote,omitempty"`
	// Pools is the pools section (docker).
	Pools *poolStats `json:"pools,omitempty"`
	// Net is the network section (docker runc).
	Net *netStats `json:"network,omitempty"`
	// Checkpoints is the checkpoints section (local).
	Checkpoints *cpStats `json:"checkpoints,omitempty"`
	// HTTP is the serve --http section (docker, local).
	HTTP *httpStats `json:"serveHTTP,omitempty"`
}

type backendStats struct {
	Name        string          `json:"name"`
	Skipped     string          `json:"skipped,omitempty"`
	Detail      string          `json:"detail,omitempty"`
	CLISkipped  string          `json:"cliSkipped,omitempty"`
	Latency     []latencyRow    `json:"latency,omitempty"`
	Extra       []extraRow      `json:"extraBaselines,omitempty"`
	Throughput  []throughputRow `json:"throughput,omitempty"`
	Concurrency *concurrencyRow `json:"concurrency,omitempty"`
	// The old path (NoHelper) beside the helper.
	Helper        bool            `json:"helper"`
	NoHelperErr   string          `json:"noHelperError,omitempty"`
	ConcurrencyNH *concurrencyRow `json:"concurrencyNoHelper,omitempty"`
	First         []firstCallRow  `json:"firstCall,omitempty"`
	SlowRC        *slowRCStats    `json:"slowBashrc,omitempty"`
	Serve         *serveStats     `json:"serve,omitempty"`
	Notes         []string        `json:"notes,omitempty"`
}

type latencyRow struct {
	Op        string  `json:"op"`
	InProcess stats   `json:"inProcess"`
	NoHelper  *stats  `json:"inProcessNoHelper,omitempty"`
	NHRatio   float64 `json:"noHelperOverBaseline,omitempty"`
	CLI       *stats  `json:"cli,omitempty"`
	Baseline  string  `json:"baseline"`
	Base      stats   `json:"baselineStats"`
	InRatio   float64 `json:"inProcessOverBaseline"`
	CLIRatio  float64 `json:"cliOverBaseline,omitempty"`
}

type extraRow struct {
	Name string `json:"name"`
	stats
}

type throughputRow struct {
	What       string  `json:"what"`
	Via        string  `json:"via"`
	Bytes      int64   `json:"bytes"`
	Seconds    float64 `json:"seconds"`
	MBps       float64 `json:"MBps"`
	PeakRSSMiB float64 `json:"peakRSSMiB,omitempty"`
	Baseline   string  `json:"baseline,omitempty"`
	BaseMBps   float64 `json:"baselineMBps,omitempty"`
	Ratio      float64 `json:"overBaseline,omitempty"`
	Err        string  `json:"error,omitempty"`
}

type concurrencyRow struct {
	Calls   int     `json:"calls"`
	Command string  `json:"command"`
	OneMs   float64 `json:"oneCallMs"`
	AllMs   float64 `json:"allCallsMs"`
	Ratio   float64 `json:"ratio"`
	Err     string  `json:"error,omitempty"`
}

func runBench(ctx context.Context, o *options) error {
	start := time.Now()
	p := newProgress()
	defer p.done()
	res := &results{Date: start.UTC().Format(time.RFC3339), Host: hostLine(), Quick: o.quick, N: o.n, CLIN: o.cliN}
	if o.grepOnly {
		e, err := openEnv(ctx, o, "local")
		if err != nil {
			return err
		}
		res.Grep, res.GrepNote = grepGoSrc(ctx, o, p, e)
		e.close()
		res.Seconds = time.Since(start).Seconds()
		res.Targets = grepTargets(res)
		return writeResults(o, res)
	}
	// A section alone: its results and its targets.
	only := func(run func(), targets func(*results) []targetResult) error {
		run()
		res.Seconds = time.Since(start).Seconds()
		res.Targets = targets(res)
		return writeResults(o, res)
	}
	switch {
	case o.poolOnly:
		return only(func() { res.Pools = poolBench(ctx, o, p) }, poolTargets)
	case o.netOnly:
		return only(func() { res.Net = netBench(ctx, o, p) }, netTargets)
	case o.httpOnly:
		return only(func() { res.HTTP = httpBench(ctx, o, p) }, httpTargets)
	case o.checkpointOnly:
		return only(func() { res.Checkpoints = cpBench(ctx, o, p) }, cpTargets)
	}
	for _, name := range o.backends {
		if ctx.Err() != nil {
			break
		}
		bs := &backendStats{Name: name}
		res.Backends = append(res.Backends, bs)
		p.step("%s: opening", name)
		e, err := openEnv(ctx, o, name)
		if err != nil {
			bs.Skipped = err.Error()
			p.step("%s: skipped: %v", name, err)
			continue
		}
		benchBackend(ctx, o, p, e, bs)
		if name == "local" && bs.Skipped == "" {
			res.Grep, res.GrepNote = grepGoSrc(ctx, o, p, e)
		}
		e.close()
	}
	if o.has("docker") && ctx.Err() == nil {
		res.Pools = poolBench(ctx, o, p)
	}
	if o.has("docker") && ctx.Err() == nil {
		res.Net = netBench(ctx, o, p)
	}
	if o.has("local") && ctx.Err() == nil {
		res.Checkpoints = cpBench(ctx, o, p)
	}
	if o.has("docker") && ctx.Err() == nil {
		res.HTTP = httpBench(ctx, o, p)
	}
	res.Seconds = time.Since(start).Seconds()
	res.Targets = append(append(append(append(append(evalTargets(res), grepTargets(res)...), poolTargets(res)...), netTargets(res)...), cpTargets(res)...), httpTargets(res)...)
	return writeResults(o, res)
}

func benchBackend(ctx context.Context, o *options, p *progress, e *env, bs *backendStats) {
	info := e.raw.Info()
	bs.Helper = info.Has("helper")
	bs.Detail = fmt.Sprintf("shell %s, capabilities %s", info.Shell, strings.Join(info.Capabilities, ","))
	if len(info.Limits) > 0 {
		bs.Notes = append(bs.Notes, "limits: "+strings.Join(info.Limits, "; "))
	}
	p.step("%s: fixtures (10,000-file tree)", e.name)
	if err := setupFixtures(ctx, e); err != nil {
		bs.Skipped = "fixtures: " + err.Error()
		return
	}
	bases, stopBase, err := latBaselines(ctx, e)
	defer stopBase()
	if err != nil {
		bs.Notes = append(bs.Notes, "baselines unavailable: "+err.Error())
	}
	nh, err := openNoHelper(ctx, e)
	if err != nil {
		bs.NoHelperErr = err.Error()
	} else {
		defer nh.close()
		bs.Notes = append(bs.Notes, "no helper: "+strings.Join(nh.raw.Info().Limits, "; "))
	}
	// One CLI call first: if the CLI cannot reach this backend, say why once.
	if _, err := cliTool(ctx, o, e, "bash", `{"command":"true"}`); err != nil {
		bs.CLISkipped = err.Error()
	}
	for _, op := range latOps {
		row := latencyRow{Op: op.name}
		n := o.n
		var st toggle
		p.step("%s: %s in-process ×%d", e.name, op.name, n)
		row.InProcess = timeN(p, e.name+" "+op.name, n, func(int) error {
			_, err := callTool(ctx, e.lp, op.tool, op.args("inproc", &st))
			if err == nil && op.key == "edit" {
				st.flipped = !st.flipped
			}
			return err
		})
		if nh != nil {
			var st toggle
			nn := o.n
			if e.name != "local" {
				nn = o.cliN // the old path costs a process per op
			}
			p.step("%s: %s in-process, no helper ×%d", e.name, op.name, nn)
			s := timeN(p, e.name+" nohelper "+op.name, nn, func(int) error {
				_, err := callTool(ctx, nh.lp, op.tool, op.args("nohelper", &st))
				if err == nil && op.key == "edit" {
					st.flipped = !st.flipped
				}
				return err
			})
			row.NoHelper = &s
		}
		if bs.CLISkipped == "" && row.InProcess.N == 0 && row.InProcess.Errs > 0 {
			// The same path through a subprocess would fail the same way:
			// spend the time elsewhere.
			row.CLI = &stats{Err: "not run: the in-process call failed"}
		} else if bs.CLISkipped == "" {
			var st toggle
			p.step("%s: %s CLI ×%d", e.name, op.name, o.cliN)
			s := timeN(p, e.name+" cli "+op.name, o.cliN, func(int) error {
				_, err := cliTool(ctx, o, e, op.tool, op.args("cli", &st))
				if err == nil && op.key == "edit" {
					st.flipped = !st.flipped
				}
				return err
			})
			row.CLI = &s
		}
		if b, ok := bases[op.key]; ok {
			var st toggle
			nb := n
			if e.name != "local" {
				nb = o.cliN // external processes: as many as the CLI runs
			}
			p.step("%s: %s baseline %s ×%d", e.name, op.name, b.name, nb)
			row.Baseline = b.name
			row.Base = timeN(p, e.name+" base "+op.name, nb, func(int) error {
				err := b.f(ctx, &st)
				if err == nil {
					st.flipped = !st.flipped
				}
				return err
			})
			row.InRatio = ratio(row.InProcess.P50Ms, row.Base.P50Ms)
			if row.NoHelper != nil {
				row.NHRatio = ratio(row.NoHelper.P50Ms, row.Base.P50Ms)
			}
			if row.CLI != nil {
				row.CLIRatio = ratio(row.CLI.P50Ms, row.Base.P50Ms)
			}
		}
		bs.Latency = append(bs.Latency, row)
	}
	extra := extraBaselines(ctx, e)
	names := make([]string, 0, len(extra))
	for k := range extra {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		f := extra[k]
		n := o.n
		if strings.Contains(k, "fresh") {
			n = o.cliN
		}
		p.step("%s: baseline %s ×%d", e.name, k, n)
		bs.Extra = append(bs.Extra, extraRow{Name: k, stats: timeN(p, k, n, func(int) error { return f(ctx) })})
	}
	switch bs.Name {
	case "runsc":
		// Latency only: gVisor's ptrace platform makes the 1 GiB and
		// 64 MiB transfers minutes long, and it serializes exec.
		bs.Notes = append(bs.Notes, "latency only (no throughput or concurrency runs on gVisor)")
		return
	case "podman":
		// Latency only: what differs from docker is the engine's exec
		// path, which the latency rows and their baselines show.
		bs.Notes = append(bs.Notes, "latency only (the docker backend on Podman's service; baselines are the docker CLI against the same service)")
		return
	}
	if e.name == "k8s" {
		// Latency and the first call: the transfers have no kubectl
		// baseline here yet.
		bname, bf := firstCallBaseline(e)
		bs.First = firstCalls(ctx, o, p, e, e.spec, bname, bf)
		bs.Notes = append(bs.Notes, "latency and first call only (pods/exec; baselines are kubectl exec into the same pod)")
		return
	}
	bs.Throughput = throughput(ctx, o, p, e)
	bs.Concurrency = concurrency(ctx, p, e, 3)
	if nh != nil {
		bs.ConcurrencyNH = concurrency(ctx, p, nh, 1)
	}
	bname, bf := firstCallBaseline(e)
	bs.First = firstCalls(ctx, o, p, e, e.spec, bname, bf)
	switch e.name {
	case "docker":
		base, names := map[string]stats{}, map[string]string{}
		for _, r := range bs.Latency {
			if r.Baseline != "" {
				base[latKey(r.Op)], names[latKey(r.Op)] = r.Base, r.Baseline
			}
		}
		bs.Serve = serveBench(ctx, o, p, e, base, names) // restarts the container last
	case "ssh":
		bs.SlowRC = slowRCBench(ctx, o, p)
	}
}

// latKey is the key of the latency op named name.
func latKey(name string) string {
	for _, op := range latOps {
		if op.name == name {
			return op.key
		}
	}
	return ""
}

func hostLine() string {
	h, _ := os.Hostname()
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return fmt.Sprintf("%s, %d CPUs, linux %s, %s", h, runtime.NumCPU(), strings.TrimSpace(string(kernel)), runtime.Version())
}
