package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/k8s"
)

// k8sPools are the pools section's Kubernetes rows: claims from an
// agent-sandbox warm pool (SandboxClaim, then the backend on the claimed
// pod and a first command) against an ephemeral --image pod's create →
// first command, measured in the same run on the cluster $KUBECONFIG names.
type k8sPools struct {
	// Skipped says why the rows were not measured (no cluster).
	Skipped     string    `json:"skipped,omitempty"`
	Pool        string    `json:"pool,omitempty"`
	Members     int       `json:"members,omitempty"`
	FillSeconds float64   `json:"fillSeconds,omitempty"`
	Rows        []poolRow `json:"rows,omitempty"`
	// Phases split the claim row: k8s.Claim, k8s.New on the pod, the
	// first Run.
	Phases []extraRow `json:"claimPhases,omitempty"`
	Notes  []string   `json:"notes,omitempty"`
}

const (
	k8sClaimTarget = 0.2 // k8s Claim + first call ÷ ephemeral pod create → first call
	k8sClaimOp     = "k8s Go API: Claim + first `bash true`"
	k8sColdOp      = "k8s cold: ephemeral --image pod, create → first `bash true`"
	k8sColdBase    = "ephemeral pod (k8s cold row)"
)

// poolBench runs the pools section: docker's rows, then Kubernetes'.
func poolBench(ctx context.Context, o *options, p *progress) *poolStats {
	ps := dockerPoolBench(ctx, o, p)
	if ctx.Err() == nil {
		ps.K8s = k8sPoolBench(ctx, o, p, ps)
	}
	return ps
}

// k8sPoolBench fills a warm pool (named after this process, drained before
// it returns) with one member per claim, measures the cold baseline, then
// the claims. Each claimed pod is deleted (Down) off the clock.
func k8sPoolBench(ctx context.Context, o *options, p *progress, ps *poolStats) *k8sPools {
	kp := &k8sPools{}
	skip := func(reason string) *k8sPools {
		kp.Skipped = reason
		kp.Rows = []poolRow{
			{Op: k8sClaimOp, Stats: stats{Err: "skipped: " + reason}, Baseline: k8sColdBase, Limit: k8sClaimTarget, Target: k8sClaimTargetText(), Status: "not measured"},
		}
		p.step("pools: k8s rows skipped: %s", reason)
		return kp
	}
	if !o.has("k8s") {
		return skip("k8s is not in -backends")
	}
	kc := os.Getenv("KUBECONFIG")
	if kc == "" {
		return skip("KUBECONFIG is not set (make cluster prints a cluster's kubeconfig)")
	}
	c, err := k8s.NewClient(k8s.Config{Kubeconfig: kc})
	if err != nil {
		return skip(err.Error())
	}
	if _, err := k8s.ServerVersion(c); err != nil {
		return skip("no cluster: " + err.Error())
	}
	n := o.poolN
	baseN := 5
	if o.quick {
		baseN = 3
	}
	labels := map[string]string{benchLabel: strconv.Itoa(os.Getpid())}

	// Each claimed pod goes down after the clock stops, before the next
	// claim: deletions in the background (several seconds each) slowed the
	// claims they overlapped (k8s.Claim p50 265-336 ms against 157-166 ms
	// on a 2-CPU host).
	down := func(pod string) {
		dctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if err := k8s.Down(dctx, c, pod); err != nil {
			kp.Notes = append(kp.Notes, "down: "+err.Error())
		}
	}
	kp.Pool = fmt.Sprintf("pibench-%d-k8s", os.Getpid())
	defer func() {
		p.step("pools: k8s: draining %s", kp.Pool)
		dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := k8s.PoolDrain(dctx, c, kp.Pool); err != nil {
			kp.Notes = append(kp.Notes, "drain "+kp.Pool+": "+err.Error())
		}
	}()

	// The baseline: an ephemeral pod, create → running → helper → true.
	p.step("pools: k8s cold ephemeral pod + true ×%d", baseN)
	bds, bs := timeDsOwn(p, "pools k8s cold", baseN, func(int) (time.Duration, error) {
		cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		t := time.Now()
		b, err := k8s.New(cctx, k8s.Config{Kubeconfig: kc, Image: o.poolImage, Labels: labels, ShimBinary: o.shim})
		if err != nil {
			return 0, err
		}
		err = b.Run(cctx, &ops.Cmd{Command: "true"})
		d := time.Since(t)
		// Close deletes the pod and waits until it is gone: off the clock.
		if cerr := b.Close(); err == nil && cerr != nil {
			err = cerr
		}
		return d, err
	})
	cold := poolRow{Op: k8sColdOp, Stats: bs, P95Ms: quantile(bds, 0.95), Baseline: "docker run (above)", BaseMs: ps.Base.P50Ms,
		Target: "— (the k8s claim row's baseline)", Status: "reported"}
	cold.Ratio = ratio(bs.P50Ms, ps.Base.P50Ms)
	if bs.N == 0 {
		cold.Status = "not measured"
	}
	kp.Rows = append(kp.Rows, cold)

	// The pool: one idle member per claim (and the warm-up's), so that no
	// claim waits for the warm pool to replace a member.
	size := n + 1
	p.step("pools: k8s fill %d (%s)", size, kp.Pool)
	t := time.Now()
	_, err = k8s.PoolFill(ctx, k8s.Config{Kubeconfig: kc, Image: o.poolImage, Labels: labels, ShimBinary: o.shim}, kp.Pool, size, 15*time.Minute, func(string) {})
	kp.FillSeconds = time.Since(t).Seconds()
	if err != nil {
		kp.Rows = append(kp.Rows, poolRow{Op: k8sClaimOp, Stats: stats{Errs: 1, Err: "fill: " + err.Error()}, Baseline: k8sColdBase, BaseMs: bs.P50Ms,
			Limit: k8sClaimTarget, Target: k8sClaimTargetText(), Status: "not measured"})
		return kp
	}
	kp.Members = size

	p.step("pools: k8s Claim + New + true ×%d", n)
	phase := make([][]time.Duration, 3)
	ads, as := timeDsOwn(p, "pools k8s claim", n, func(i int) (time.Duration, error) {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		t := time.Now()
		var laps [3]time.Duration
		lap := func(j int) { laps[j] = time.Since(t) }
		pod, err := k8s.Claim(cctx, k8s.Config{Kubeconfig: kc}, kp.Pool, 0)
		if err != nil {
			return 0, err
		}
		defer down(pod)
		lap(0)
		b, err := k8s.New(cctx, k8s.Config{Kubeconfig: kc, Pod: pod, ShimBinary: o.shim})
		if err != nil {
			return 0, err
		}
		lap(1)
		err = b.Run(cctx, &ops.Cmd{Command: "true"})
		d := time.Since(t)
		lap(2)
		if err == nil && i >= 0 { // not the warm-up
			for j := range laps {
				phase[j] = append(phase[j], laps[j]-prev(laps[:], j))
			}
		}
		if cerr := b.Close(); err == nil && cerr != nil {
			err = cerr
		}
		return d, err
	})
	claim := poolRow{Op: k8sClaimOp, Stats: as, P95Ms: quantile(ads, 0.95), Baseline: k8sColdBase, BaseMs: bs.P50Ms,
		Limit: k8sClaimTarget, Target: k8sClaimTargetText()}
	claim.Ratio = ratio(as.P50Ms, bs.P50Ms)
	claim.Status = statusOf(as, bs.N > 0 && claim.Ratio <= k8sClaimTarget)
	if bs.N == 0 {
		claim.Status = "not measured"
	}
	kp.Rows = append(kp.Rows, claim)
	for j, name := range []string{"k8s.Claim", "k8s.New (pod)", "first Run `true`"} {
		kp.Phases = append(kp.Phases, extraRow{Name: name, stats: summarize(phase[j])})
	}
	return kp
}

// prev is the lap before j (zero for the first).
func prev(laps []time.Duration, j int) time.Duration {
	if j == 0 {
		return 0
	}
	return laps[j-1]
}

func k8sClaimTargetText() string {
	return fmt.Sprintf("p50 ≤ %g× baseline", k8sClaimTarget)
}

// k8sPoolTargets are the Kubernetes rows with a target.
func k8sPoolTargets(kp *k8sPools) []targetResult {
	if kp == nil {
		return nil
	}
	var ts []targetResult
	for _, r := range kp.Rows {
		if r.Limit == 0 {
			continue
		}
		ts = append(ts, targetResult{"pools: " + r.Op + " " + r.Target, poolValue(r), r.Status})
	}
	return ts
}

// k8sPoolMarkdown is the pools section's Kubernetes part.
func k8sPoolMarkdown(kp *k8sPools) string {
	if kp == nil {
		return ""
	}
	var b []byte
	w := func(format string, a ...any) { b = fmt.Appendf(b, format, a...) }
	w("\n### Pools on Kubernetes (agent-sandbox warm pool)\n\n")
	if kp.Skipped != "" {
		w("Skipped: %s\n", cellText(kp.Skipped))
		return string(b)
	}
	w("A SandboxClaim on the warm pool `%s`", kp.Pool)
	if kp.Members > 0 {
		w(" (%d idle members, helper daemons running, filled in %.1f s)", kp.Members, kp.FillSeconds)
	}
	w(", then `k8s.New` on the claimed pod and `Run(\"true\")`; the baseline is an ephemeral `--image` pod (`k8s.New` with Image: create → running → helper → `true`). ")
	w("Claimed pods are deleted (claim and pod) and ephemeral pods removed after the clock stops.\n\n")
	b = append(b, poolTable(kp.Rows)...)
	b = append(b, phasesLine("Of a k8s claim", kp.Phases)...)
	for _, n := range kp.Notes {
		w("\nNote: %s\n", cellText(n))
	}
	return string(b)
}
