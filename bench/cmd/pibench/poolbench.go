package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/ops/docker"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
	"github.com/pi-sandbox/pi-sandbox/sandbox/pool"
)

// poolStats is the pools section: claims from a filled pool
// through the Go API and the CLI, a cold one-shot sandbox, concurrent
// claims, all against `docker run --rm --network none IMG true` measured in
// the same run; and the density of idle members.
type poolStats struct {
	Image   string     `json:"image"`
	Rows    []poolRow  `json:"rows,omitempty"`
	Density *poolDense `json:"density,omitempty"`
	// Phases splits a Go API claim: the rename, docker.New (its probe),
	// sandbox.OpenBackend, the first call.
	Phases  []extraRow `json:"claimPhases,omitempty"`
	Err     string     `json:"error,omitempty"`
	Notes   []string   `json:"notes,omitempty"`
	Base    stats      `json:"baselineStats"`
	BaseP95 float64    `json:"baselineP95Ms"`
	// K8s are the Kubernetes rows (k8spoolbench.go).
	K8s *k8sPools `json:"k8s,omitempty"`
}

type poolRow struct {
	Op       string  `json:"op"`
	Stats    stats   `json:"stats"`
	P95Ms    float64 `json:"p95Ms"`
	Baseline string  `json:"baseline"`
	BaseMs   float64 `json:"baselineP50Ms"`
	Ratio    float64 `json:"ratio"` // p50 (p95 for the concurrent row) ÷ baseline
	Limit    float64 `json:"limit"`
	Target   string  `json:"target"`
	Status   string  `json:"status"`
}

// poolDense is the density of idle members: memory from the cgroup (v1),
// the host's containerd-shim RSS per container.
type poolDense struct {
	Members      int     `json:"members"`
	FillSeconds  float64 `json:"fillSeconds"`
	MemMiBAvg    float64 `json:"cgroupMemoryMiBAvg"`
	MemMiBMax    float64 `json:"cgroupMemoryMiBMax"`
	MemMeasured  int     `json:"cgroupMeasured"`
	ShimRSSMiB   float64 `json:"shimRSSMiBAvg"`
	ShimMeasured int     `json:"shimMeasured"`
	Note         string  `json:"note,omitempty"`
	Err          string  `json:"error,omitempty"`
}

const (
	poolClaimTarget = 0.03 // Go API claim + first bash true ÷ docker run
	poolCLITarget   = 0.25 // up --pool + tool --container ÷ docker run
	poolColdTarget  = 1.2  // tool --image ÷ docker run
	poolConcTarget  = 3.0  // p95 of 32 concurrent claims ÷ single-claim p50
	poolTailTarget  = 2.0  // claim p95 ÷ its p50
	poolConcurrent  = 32
)

// dockerPoolBench runs the pools section's docker rows. Every pool it fills
// is named after this process and drained (claimed members removed too)
// before it returns.
func dockerPoolBench(ctx context.Context, o *options, p *progress) *poolStats {
	ps := &poolStats{Image: o.poolImage}
	n := o.poolN
	cli, err := docker.NewClient()
	if err != nil {
		ps.Err = err.Error()
		return ps
	}
	defer cli.Close()
	prefix := fmt.Sprintf("pibench-%d-", os.Getpid())
	var names []string
	mk := func(suffix string, size int) *pool.Pool {
		names = append(names, prefix+suffix)
		return &pool.Pool{Name: prefix + suffix, Config: docker.Config{Image: o.poolImage, ShimBinary: o.shim}, Size: size}
	}
	defer func() {
		// Drain with a context of its own: an interrupted run still cleans up.
		dctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		p.step("pools: removing every member")
		for _, name := range names {
			ms, err := docker.PoolMembers(dctx, cli, name)
			if err != nil {
				ps.Notes = append(ps.Notes, "drain "+name+": "+err.Error())
				continue
			}
			for _, m := range ms {
				if err := docker.Down(dctx, cli, m.ID); err != nil {
					ps.Notes = append(ps.Notes, "remove "+m.ID[:12]+": "+err.Error())
				}
			}
		}
	}()

	base := "docker run --rm --network none " + o.poolImage + " true"
	p.step("pools: baseline %s ×%d", base, n)
	bds, bs := timeDs(p, "pools base", n, func(int) error {
		_, err := runExt(ctx, nil, "docker", "run", "--rm", "--network", "none", o.poolImage, "true")
		return err
	})
	ps.Base, ps.BaseP95 = bs, quantile(bds, 0.95)
	if bs.N == 0 {
		ps.Err = "baseline: " + bs.Err
		return ps
	}
	row := func(op string, s stats, ds []time.Duration, limit float64, target string) poolRow {
		r := poolRow{Op: op, Stats: s, P95Ms: quantile(ds, 0.95), Baseline: base, BaseMs: bs.P50Ms, Limit: limit, Target: target}
		r.Ratio = ratio(s.P50Ms, bs.P50Ms)
		return r
	}

	// Go API: claim + first bash true, the sandbox removed after the clock.
	api := mk("api", n+1) // +1: timeDs warms up once
	p.step("pools: fill %d (Go API)", api.Size)
	if _, err := api.Fill(ctx); err != nil {
		ps.Err = "fill: " + err.Error()
		return ps
	}
	claimOnce := func(pl *pool.Pool) (time.Duration, error) {
		t := time.Now()
		sb, err := pl.Claim(ctx, sandbox.Config{})
		if err != nil {
			return 0, err
		}
		_, err = sb.Call(ctx, "bash", map[string]any{"command": "true"})
		d := time.Since(t)
		if cerr := sb.Close(); err == nil && cerr != nil {
			err = cerr
		}
		return d, err
	}
	p.step("pools: Go API claim + bash true ×%d", n)
	ads, as := timeDsOwn(p, "pools claim", n, func(int) (time.Duration, error) { return claimOnce(api) })
	claim := row("Go API: Claim + first `bash true`", as, ads, poolClaimTarget, fmt.Sprintf("≤ %g× baseline; p95 ≤ %g× p50", poolClaimTarget, poolTailTarget))
	claim.Status = "not measured"
	if as.N > 0 {
		claim.Status = verdict(claim.Ratio <= poolClaimTarget && claim.P95Ms <= poolTailTarget*as.P50Ms)
	}
	ps.Rows = append(ps.Rows, claim)

	ps.Phases = claimPhases(ctx, o, p, cli, mk("phases", n))

	// CLI: up --pool, then tool --container; down after the clock.
	cp := mk("cli", n+1)
	p.step("pools: fill %d (CLI)", cp.Size)
	if _, err := cp.Fill(ctx); err != nil {
		ps.Notes = append(ps.Notes, "CLI fill: "+err.Error())
	} else {
		p.step("pools: CLI up --pool + tool --container ×%d", n)
		cds, cs := timeDsOwn(p, "pools cli", n, func(int) (time.Duration, error) {
			t := time.Now()
			out, err := piCmd(ctx, o, "up", "--pool", cp.Name)
			if err != nil {
				return 0, err
			}
			id := firstLine(out)
			_, err = piCmd(ctx, o, "tool", "--container", id, "bash", `{"command":"true"}`)
			d := time.Since(t)
			if _, derr := piCmd(ctx, o, "down", id); err == nil && derr != nil {
				err = derr
			}
			return d, err
		})
		r := row("CLI: `up --pool` + `tool --container ID bash true`", cs, cds, poolCLITarget, fmt.Sprintf("≤ %g× baseline", poolCLITarget))
		r.Status = statusOf(cs, r.Ratio <= poolCLITarget)
		ps.Rows = append(ps.Rows, r)
	}

	// Cold: a one-shot sandbox per call.
	p.step("pools: cold tool --image ×%d", n)
	kds, ks := timeDs(p, "pools cold", n, func(int) error {
		_, err := piCmd(ctx, o, "tool", "--image", o.poolImage, "bash", `{"command":"true"}`)
		return err
	})
	r := row("cold: `tool --image IMG bash true`", ks, kds, poolColdTarget, fmt.Sprintf("≤ %g× baseline", poolColdTarget))
	r.Status = statusOf(ks, r.Ratio <= poolColdTarget)
	ps.Rows = append(ps.Rows, r)

	// 32 concurrent claims: their p95 against the single-claim p50.
	cc := mk("conc", poolConcurrent)
	p.step("pools: fill %d (concurrent claims)", cc.Size)
	if _, err := cc.Fill(ctx); err != nil {
		ps.Notes = append(ps.Notes, "concurrent fill: "+err.Error())
	} else {
		p.step("pools: %d concurrent claims + bash true", poolConcurrent)
		ds := make([]time.Duration, poolConcurrent)
		errs := make([]error, poolConcurrent)
		var wg sync.WaitGroup
		for i := range poolConcurrent {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ds[i], errs[i] = claimOnce(cc)
			}()
		}
		wg.Wait()
		var ok []time.Duration
		var s stats
		for i, err := range errs {
			if err != nil {
				s.Errs++
				if s.Err == "" {
					s.Err = err.Error()
				}
				continue
			}
			ok = append(ok, ds[i])
		}
		e, f := s.Errs, s.Err
		s = summarize(ok)
		s.Errs, s.Err = e, f
		r := poolRow{Op: fmt.Sprintf("%d concurrent claims + `bash true` (p95)", poolConcurrent), Stats: s, P95Ms: quantile(ok, 0.95),
			Baseline: "single claim p50 (Go API row)", BaseMs: as.P50Ms, Limit: poolConcTarget, Target: fmt.Sprintf("p95 ≤ %g× single-claim p50", poolConcTarget)}
		r.Ratio = ratio(r.P95Ms, as.P50Ms)
		r.Status = statusOf(s, as.N > 0 && r.Ratio <= poolConcTarget)
		ps.Rows = append(ps.Rows, r)
	}

	ps.Density = poolDensity(ctx, o, p, cli, mk("density", o.poolDensity))
	return ps
}

// claimPhases claims every member of pl step by step, as pool.Claim does,
// and times each step.
func claimPhases(ctx context.Context, o *options, p *progress, cli *client.Client, pl *pool.Pool) []extraRow {
	p.step("pools: fill %d (claim phases)", pl.Size)
	if _, err := pl.Fill(ctx); err != nil {
		return []extraRow{{Name: "fill", stats: stats{Errs: 1, Err: err.Error()}}}
	}
	names := []string{"rename (docker.Claim)", "docker.New (probe)", "sandbox.OpenBackend", "first `bash true`"}
	ds := make([][]time.Duration, len(names))
	var first error
	p.step("pools: claim phases ×%d", pl.Size)
	for range pl.Size {
		var sb *sandbox.Sandbox
		err := func() error {
			t := time.Now()
			lap := func(i int) { ds[i] = append(ds[i], time.Since(t)); t = time.Now() }
			id, err := docker.Claim(ctx, cli, pl.Name, true, nil)
			if err != nil {
				return err
			}
			lap(0)
			b, err := docker.New(ctx, docker.Config{Container: id, ShimBinary: o.shim, RemoveOnClose: true})
			if err != nil {
				docker.Down(ctx, cli, id)
				return err
			}
			lap(1)
			if sb, err = sandbox.OpenBackend(ctx, b, sandbox.Config{}); err != nil {
				b.Close()
				return err
			}
			lap(2)
			_, err = sb.Call(ctx, "bash", map[string]any{"command": "true"})
			lap(3)
			return err
		}()
		if sb != nil {
			sb.Close()
		}
		if err != nil && first == nil {
			first = err
		}
	}
	var rows []extraRow
	for i, name := range names {
		rows = append(rows, extraRow{Name: name, stats: summarize(ds[i])})
	}
	if first != nil {
		rows[0].Errs, rows[0].Err = 1, first.Error()
	}
	return rows
}

// poolDensity fills pl and reports the fill time, each member's memory as
// its cgroup (v1) counts it, and the RSS of its containerd-shim on the host.
func poolDensity(ctx context.Context, o *options, p *progress, cli *client.Client, pl *pool.Pool) *poolDense {
	d := &poolDense{}
	p.step("pools: density, fill %d idle members", pl.Size)
	t := time.Now()
	ids, err := pl.Fill(ctx)
	d.FillSeconds = time.Since(t).Seconds()
	d.Members = len(ids)
	if err != nil {
		d.Err = err.Error()
		return d
	}
	ms, err := docker.PoolMembers(ctx, cli, pl.Name)
	if err != nil {
		d.Err = err.Error()
		return d
	}
	shims := shimRSS()
	var mem, rss []float64
	for _, m := range ms {
		if b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/memory/docker", m.ID, "memory.usage_in_bytes")); err == nil {
			if v, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64); err == nil {
				mem = append(mem, v/(1<<20))
			}
		}
		if v, ok := shims[m.ID]; ok {
			rss = append(rss, v)
		}
	}
	d.MemMeasured, d.ShimMeasured = len(mem), len(rss)
	d.MemMiBAvg, d.MemMiBMax = avgMax(mem)
	d.ShimRSSMiB, _ = avgMax(rss)
	switch {
	case len(mem) == 0:
		d.Note = "no cgroup v1 memory counter under /sys/fs/cgroup/memory/docker (cgroup v2 or another driver)"
	case len(rss) < len(ms):
		d.Note = fmt.Sprintf("containerd-shim attributed to %d of %d members (by its -id argument)", len(rss), len(ms))
	}
	return d
}

// shimRSS maps container ids to the RSS (MiB) of the containerd-shim whose
// command line names them (`-id ID`: one shim per container with docker).
func shimRSS() map[string]float64 {
	out := map[string]float64{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		cmd, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil || !bytes.Contains(cmd, []byte("containerd-shim")) {
			continue
		}
		args := strings.Split(string(cmd), "\x00")
		id := ""
		for i, a := range args {
			if a == "-id" && i+1 < len(args) {
				id = args[i+1]
			}
		}
		status, err := os.ReadFile(filepath.Join(dir, "status"))
		if id == "" || err != nil {
			continue
		}
		for _, l := range strings.Split(string(status), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
				if kb, err := strconv.ParseFloat(f[1], 64); err == nil {
					out[id] = kb / 1024
				}
			}
		}
	}
	return out
}

func avgMax(v []float64) (avg, max float64) {
	for _, x := range v {
		avg += x
		if x > max {
			max = x
		}
	}
	if len(v) > 0 {
		avg /= float64(len(v))
	}
	return avg, max
}

func statusOf(s stats, ok bool) string {
	if s.N == 0 {
		return "not measured"
	}
	return verdict(ok)
}

// timeDs is timeN keeping the durations (the pools rows report p95).
func timeDs(p *progress, label string, n int, f func(i int) error) ([]time.Duration, stats) {
	return timeDsOwn(p, label, n, func(i int) (time.Duration, error) {
		t := time.Now()
		err := f(i)
		return time.Since(t), err
	})
}

// timeDsOwn is timeDs for calls that time themselves (to leave their
// cleanup out of the figure). One warm-up call first.
func timeDsOwn(p *progress, label string, n int, f func(i int) (time.Duration, error)) ([]time.Duration, stats) {
	if _, err := f(-1); err != nil {
		return nil, stats{Errs: 1, Err: err.Error()}
	}
	var ds []time.Duration
	errs, first := 0, ""
	for i := range n {
		d, err := f(i)
		if err != nil {
			errs++
			if first == "" {
				first = err.Error()
			}
		} else {
			ds = append(ds, d)
		}
		p.tick(label, i+1, n)
	}
	s := summarize(ds)
	s.Errs, s.Err = errs, first
	return ds, s
}

func quantile(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return ms(s[int(q*float64(len(s)-1)+0.5)])
}

// piCmd runs `pi-sandbox ARGS` (any command) and returns its stdout.
func piCmd(ctx context.Context, o *options, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, o.bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("pi-sandbox %s: %v: %s", args[0], err, firstLine(errb.String()))
	}
	if bytes.Contains(out.Bytes(), []byte(`"isError":true`)) {
		return "", fmt.Errorf("pi-sandbox %s: error result: %.300s", args[0], out.String())
	}
	return out.String(), nil
}
