package main

import (
	"fmt"
	"os"
	"sort"
	"sync"
	"time"
)

// progress prints one line per step to stderr, rewritten in place on a
// terminal.
type progress struct {
	mu    sync.Mutex
	tty   bool
	start time.Time
	last  time.Time
}

func newProgress() *progress {
	fi, err := os.Stderr.Stat()
	return &progress{tty: err == nil && fi.Mode()&os.ModeCharDevice != 0, start: time.Now()}
}

// step announces a step; done/total are shown when total > 0.
func (p *progress) step(format string, a ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	msg := fmt.Sprintf("[%5.0fs] %s", time.Since(p.start).Seconds(), fmt.Sprintf(format, a...))
	if p.tty {
		fmt.Fprintf(os.Stderr, "\r\033[K%s", msg)
	} else {
		fmt.Fprintln(os.Stderr, msg)
	}
	p.last = time.Now()
}

// tick updates a counter, at most every half second (a line each on a pipe
// would flood it, so only terminals see ticks).
func (p *progress) tick(label string, done, total int) {
	if !p.tty {
		return
	}
	p.mu.Lock()
	if time.Since(p.last) < 500*time.Millisecond && done != total {
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	p.step("%s %d/%d", label, done, total)
}

func (p *progress) done() {
	if p.tty {
		fmt.Fprintln(os.Stderr)
	}
}

// stats summarises durations.
type stats struct {
	N     int     `json:"n"`
	P50Ms float64 `json:"p50Ms"`
	P99Ms float64 `json:"p99Ms"`
	MinMs float64 `json:"minMs"`
	MaxMs float64 `json:"maxMs"`
	Errs  int     `json:"errors,omitempty"`
	Err   string  `json:"firstError,omitempty"`
	// Budget says the op stopped early.
	Budget string `json:"budget,omitempty"`
}

func summarize(ds []time.Duration) stats {
	if len(ds) == 0 {
		return stats{}
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	q := func(p float64) float64 {
		i := int(p*float64(len(s)-1) + 0.5)
		return ms(s[i])
	}
	return stats{N: len(s), P50Ms: q(0.5), P99Ms: q(0.99), MinMs: ms(s[0]), MaxMs: ms(s[len(s)-1])}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// timeN calls f n times (after one warm-up call) and summarises the
// durations. Failed calls are counted and the first error kept; their time
// is not part of the figures.
func timeN(p *progress, label string, n int, f func(i int) error) stats {
	if err := f(-1); err != nil {
		return stats{Errs: 1, Err: err.Error()}
	}
	var ds []time.Duration
	errs, first := 0, ""
	start := time.Now()
	budgetHit := false
	for i := range n {
		if time.Since(start) > opBudget && i >= 5 {
			budgetHit = true
			break
		}
		t := time.Now()
		err := f(i)
		d := time.Since(t)
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
	if budgetHit {
		s.Budget = fmt.Sprintf("stopped after %d of %d calls (%s budget per op)", len(ds)+errs, n, opBudget)
	}
	return s
}

// opBudget bounds the time spent on one op, so a slow path cannot take the
// run past its time limit; the figures then rest on fewer calls, and say so.
var opBudget = 60 * time.Second

func ratio(a, b float64) float64 {
	if b <= 0 || a <= 0 {
		return 0
	}
	return a / b
}

// fillRow sets a latency row's figures from its samples and baseline's.
func fillRow(r *netRow, ours, theirs []time.Duration, limit float64) {
	if len(ours) > 0 && len(theirs) > 0 {
		a, b := summarize(ours), summarize(theirs)
		r.N, r.Value, r.P95 = a.N, a.P50Ms, quantile(ours, 0.95)
		r.BaseValue, r.BaseP95 = b.P50Ms, quantile(theirs, 0.95)
		r.Ratio = r.Value / r.BaseValue
	}
	r.Status = statusN(len(ours) > 0 && len(theirs) > 0, r.Ratio <= limit)
}
