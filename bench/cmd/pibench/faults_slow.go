package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// A slow consumer of 1 GiB of output: a child process (so that its VmHWM is
// this call's alone) reads the output of one command, stalls for 5 s after
// the first MiB, then reads slowly for 5 s, then drains; meanwhile it makes
// other calls on the same backend. The parent watches the helper's memory in
// the target.

const slowChildCmd = "__slow-child"

const (
	slowStall    = 5 * time.Second
	slowThrottle = 5 * time.Second
	memBound     = 64 << 10 // KiB
)

type slowResult struct {
	Bytes      int64   `json:"bytes"`
	Seconds    float64 `json:"seconds"`
	VmHWMKiB   int64   `json:"vmhwmKiB"`
	OpenKiB    int64   `json:"openKiB"`
	ProbeN     int     `json:"probeN"`
	ProbeP50Ms float64 `json:"probeP50Ms"`
	ProbeMaxMs float64 `json:"probeMaxMs"`
	ProbeErrs  int     `json:"probeErrors"`
	ProbeErr   string  `json:"probeError,omitempty"`
	Err        string  `json:"error,omitempty"`
}

// slowWriter stalls, then throttles, then takes everything.
type slowWriter struct {
	n       int64
	stalled time.Time // when the stall began
}

func (w *slowWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	if w.n >= 1<<20 {
		if w.stalled.IsZero() {
			w.stalled = time.Now()
			time.Sleep(slowStall)
		} else if time.Since(w.stalled) < slowStall+slowThrottle {
			time.Sleep(2 * time.Millisecond)
		}
	}
	return len(p), nil
}

// slowChild is `pibench __slow-child SPEC TAG BYTES`.
func slowChild(ctx context.Context, args []string) int {
	var r slowResult
	defer func() {
		b, _ := json.Marshal(r)
		fmt.Printf("%s\n", b)
	}()
	if len(args) != 3 {
		r.Err = "usage: __slow-child SPEC TAG BYTES"
		return 2
	}
	var spec childSpec
	if err := json.Unmarshal([]byte(args[0]), &spec); err != nil {
		r.Err = err.Error()
		return 1
	}
	n, _ := strconv.ParseInt(args[2], 10, 64)
	b, err := openBackend(ctx, spec)
	if err != nil {
		r.Err = err.Error()
		return 1
	}
	defer b.Close()
	r.OpenKiB = vmHWM()
	done := make(chan struct{})
	var wg sync.WaitGroup
	var lats []time.Duration
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case <-time.After(250 * time.Millisecond):
			}
			t := time.Now()
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			err := b.Run(cctx, &ops.Cmd{Command: "true"})
			if err == nil {
				_, err = b.Stat(cctx, spec.WorkDir)
			}
			cancel()
			if err != nil {
				r.ProbeErrs++
				if r.ProbeErr == "" {
					r.ProbeErr = err.Error()
				}
				continue
			}
			lats = append(lats, time.Since(t))
		}
	}()
	w := &slowWriter{}
	t := time.Now()
	err = b.Run(ctx, &ops.Cmd{Command: emitCmd(n) + " # " + args[1], Output: w})
	r.Seconds = time.Since(t).Seconds()
	close(done)
	wg.Wait()
	r.Bytes = w.n
	r.VmHWMKiB = vmHWM()
	s := summarize(lats)
	r.ProbeN, r.ProbeP50Ms, r.ProbeMaxMs = s.N, s.P50Ms, s.MaxMs
	if err == nil && w.n != n {
		err = fmt.Errorf("got %d bytes, want %d", w.n, n)
	}
	if err != nil {
		r.Err = err.Error()
	}
	return 0
}

// helperMem reads VmRSS and VmHWM (KiB) of pid in the target.
func helperMem(ctx context.Context, e *env, pid int) (rss, hwm int64) {
	out, _ := probe(ctx, e, fmt.Sprintf("grep -E '^(VmRSS|VmHWM):' /proc/%d/status", pid))
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = v
		case "VmHWM:":
			hwm = v
		}
	}
	return rss, hwm
}

// slowConsumerScenario runs the child against e's target and watches the
// helper that serves it.
func slowConsumerScenario(ctx context.Context, e *env) scenResult {
	r := scenResult{Backend: e.name, Scenario: "slow consumer of 1 GiB of output (stall 5 s, slow 5 s, drain) with other calls alongside", Trials: 1}
	t := newTagger()
	spec, _ := json.Marshal(e.spec)
	exe, _ := os.Executable()
	cmd := exec.CommandContext(ctx, exe, slowChildCmd, string(spec), t.arg(0, 0), strconv.Itoa(gib))
	cmd.Stderr = os.Stderr
	type res struct {
		out []byte
		err error
	}
	ch := make(chan res, 1)
	go func() {
		out, err := cmd.Output()
		ch <- res{out, err}
	}()
	// Locally the helper runs in the client's process: the client's peak
	// RSS is both.
	inClient := e.name == "local"
	var helper int
	var maxRSS, hwm int64
	var got res
watch:
	for {
		select {
		case got = <-ch:
			break watch
		case <-time.After(500 * time.Millisecond):
		}
		if helper == 0 && !inClient {
			if v, err := look(ctx, e, t); err == nil && v.helper != 0 {
				helper = v.helper
			}
		}
		if helper != 0 {
			rss, h := helperMem(ctx, e, helper)
			maxRSS, hwm = max(maxRSS, rss), max(hwm, h)
		}
	}
	var sr slowResult
	if got.err != nil {
		r.Failures, r.FirstFail = 1, fmt.Sprintf("child: %v", got.err)
		return r
	}
	if err := json.Unmarshal(got.out, &sr); err != nil {
		r.Failures, r.FirstFail = 1, fmt.Sprintf("child: %v: %s", err, got.out)
		return r
	}
	r.P50Ms, r.P99Ms = sr.ProbeP50Ms, sr.ProbeMaxMs
	r.Note = fmt.Sprintf("%d MiB in %.1f s; client peak RSS %d MiB (%d MiB after open); helper peak RSS %d MiB (max VmRSS seen %d MiB); %d other calls alongside: p50 %.0f ms, max %.0f ms (shown as return p50 / max)",
		sr.Bytes>>20, sr.Seconds, sr.VmHWMKiB>>10, sr.OpenKiB>>10, hwm>>10, maxRSS>>10, sr.ProbeN, sr.ProbeP50Ms, sr.ProbeMaxMs)
	if inClient {
		r.Note = strings.Replace(r.Note, fmt.Sprintf("helper peak RSS %d MiB (max VmRSS seen %d MiB)", hwm>>10, maxRSS>>10), "the helper in the client's process", 1)
	}
	var fails []string
	if sr.Err != "" {
		fails = append(fails, sr.Err)
	}
	if sr.VmHWMKiB > memBound {
		fails = append(fails, fmt.Sprintf("client peak RSS %d MiB > 64 MiB", sr.VmHWMKiB>>10))
	}
	if helper == 0 && !inClient {
		fails = append(fails, "the helper serving the command was not found in the target")
	} else if hwm > memBound {
		fails = append(fails, fmt.Sprintf("helper peak RSS %d MiB > 64 MiB", hwm>>10))
	}
	if sr.ProbeErrs > 0 {
		fails = append(fails, fmt.Sprintf("%d other calls failed: %s", sr.ProbeErrs, sr.ProbeErr))
	}
	if sr.ProbeN == 0 || sr.ProbeMaxMs > 2000 {
		fails = append(fails, fmt.Sprintf("other calls not responsive (%d done, max %.0f ms)", sr.ProbeN, sr.ProbeMaxMs))
	}
	if len(fails) > 0 {
		r.Failures, r.FirstFail = 1, strings.Join(fails, "; ")
	}
	return r
}
