package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// hangLimit is how long a call may take to return after its fault before it
// counts as a hang.
const hangLimit = 30 * time.Second

// scenResult is one row of faults.md.
type scenResult struct {
	Backend   string         `json:"backend"`
	Scenario  string         `json:"scenario"`
	Trials    int            `json:"trials"`
	Failures  int            `json:"failures"`
	Hangs     int            `json:"hangs"`
	Survivors int            `json:"survivors"`
	Lost      int            `json:"lostOrPartialFiles"`
	NotReady  int            `json:"notReady,omitempty"`
	P50Ms     float64        `json:"returnP50Ms"`
	P99Ms     float64        `json:"returnP99Ms"`
	FirstFail string         `json:"firstFailure,omitempty"`
	Note      string         `json:"note,omitempty"`
	Skipped   string         `json:"skipped,omitempty"`
	Details   []string       `json:"details,omitempty"`
	Outcomes  map[string]int `json:"outcomes,omitempty"`
}

// trialOut is one trial's outcome. lat is how long the call took to return
// after the fault (timeout expiry, cancel, cut).
type trialOut struct {
	fail     string
	hang     bool
	notReady bool
	lost     bool
	lat      time.Duration
	// outcome names what happened when several outcomes are acceptable.
	outcome string
}

// tagger names the sleeps of a scenario so survivors can be found by their
// command line: sleep 7NNSSTTTT (NN run nonce, SS scenario, TTTT trial).
type tagger struct {
	prefix string
}

var scenCounter atomic.Int32
var runNonce = rand.IntN(90) + 10

func newTagger() tagger {
	return tagger{prefix: fmt.Sprintf("7%02d%02d", runNonce, scenCounter.Add(1)%100)}
}

func (t tagger) arg(trial, k int) string { return fmt.Sprintf("%s%04d", t.prefix, (trial*2+k)%10000) }

// pattern matches the tag but not itself, so the listing does not find the
// grep that runs it.
func (t tagger) pattern() string { return t.prefix[:2] + "[" + t.prefix[2:3] + "]" + t.prefix[3:] }

func treeCmd(t tagger, trial int, setsid bool) string {
	s := ""
	if setsid {
		s = "setsid "
	}
	return fmt.Sprintf("%ssleep %s & %ssleep %s & echo ready; wait", s, t.arg(trial, 0), s, t.arg(trial, 1))
}

// listScript prints the /proc stat line of every process whose command line
// holds the tag.
func listScript(t tagger) string {
	return fmt.Sprintf(`for f in $(grep -l -a -e '%s' /proc/[0-9]*/cmdline 2>/dev/null); do d=${f%%/cmdline}; read -r s < $d/stat 2>/dev/null || continue; echo "$s"; done; echo end`, t.pattern())
}

// survivors lists the live (non-zombie) processes carrying t's tag through
// a fresh Run on b, and kills them so they do not pile up.
func survivors(ctx context.Context, b ops.Backend, t tagger) (int, []string, error) {
	var out string
	var err error
	// A fault may have dropped b's connection: the first call after it may
	// fail while the next one reconnects.
	for range 3 {
		if out, err = runOut(ctx, b, listScript(t), 60*time.Second); err == nil {
			break
		}
		time.Sleep(time.Second)
	}
	if err != nil {
		return -1, nil, fmt.Errorf("list processes: %w", err)
	}
	if !strings.Contains(out, "end") {
		return 0, nil, fmt.Errorf("list processes: incomplete output %q", out)
	}
	var live []string
	var pids []string
	for _, line := range strings.Split(out, "\n") {
		i := strings.LastIndexByte(line, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(line[i+1:])
		if len(f) == 0 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		live = append(live, line)
		pids = append(pids, strings.Fields(line)[0])
	}
	if len(pids) > 0 {
		runOut(ctx, b, "kill -9 "+strings.Join(pids, " ")+" 2>/dev/null; true", 30*time.Second)
	}
	return len(live), live, nil
}

// hostSurvivors looks for the tag in the host's /proc (a killed container's
// processes would show there).
func hostSurvivors(t tagger) int {
	ents, _ := os.ReadDir("/proc")
	n := 0
	needle := []byte(t.prefix)
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		c, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(c), string(needle)) {
			continue
		}
		st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(st)
		if i := strings.LastIndexByte(s, ')'); i >= 0 {
			if f := strings.Fields(s[i+1:]); len(f) > 0 && f[0] != "Z" && f[0] != "X" {
				n++
			}
		}
	}
	return n
}

// readySink closes ready when "ready" has been written.
type readySink struct {
	mu    sync.Mutex
	tail  string
	ready chan struct{}
	once  sync.Once
}

func newReadySink() *readySink { return &readySink{ready: make(chan struct{})} }

func (r *readySink) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.tail += string(p)
	if strings.Contains(r.tail, "ready") {
		r.once.Do(func() { close(r.ready) })
	}
	if len(r.tail) > 64 {
		r.tail = r.tail[len(r.tail)-16:]
	}
	r.mu.Unlock()
	return len(p), nil
}

func (r *readySink) isReady() bool {
	select {
	case <-r.ready:
		return true
	default:
		return false
	}
}

// runAsync runs b.Run in a goroutine; the channel yields its error.
func runAsync(ctx context.Context, b ops.Backend, c *ops.Cmd) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- b.Run(ctx, c) }()
	return ch
}

// await waits for a call's return at most hangLimit after the fault.
func await(ch <-chan error) (error, time.Duration, bool) {
	t := time.Now()
	select {
	case err := <-ch:
		return err, time.Since(t), false
	case <-time.After(hangLimit):
		return nil, hangLimit, true
	}
}

// timeoutTrial runs a process tree with a 1 s timeout.
func timeoutTrial(ctx context.Context, b ops.Backend, t tagger, i int, setsid bool) trialOut {
	const limit = time.Second
	rs := newReadySink()
	start := time.Now()
	ch := runAsync(ctx, b, &ops.Cmd{Command: treeCmd(t, i, setsid), Output: rs, Timeout: limit})
	select {
	case err := <-ch:
		return checkTimeout(err, rs, time.Since(start)-limit)
	case <-time.After(limit + hangLimit):
		return trialOut{hang: true, fail: "no return 30 s after the timeout"}
	}
}

func checkTimeout(err error, rs *readySink, lat time.Duration) trialOut {
	o := trialOut{lat: max(lat, 0), notReady: !rs.isReady()}
	var te *ops.TimeoutError
	if !errors.As(err, &te) {
		o.fail = fmt.Sprintf("want a timeout error, got %v", err)
	}
	return o
}

// abortTrial cancels the call 100 ms after the tree reported ready.
func abortTrial(ctx context.Context, b ops.Backend, t tagger, i int, setsid bool) trialOut {
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	rs := newReadySink()
	ch := runAsync(cctx, b, &ops.Cmd{Command: treeCmd(t, i, setsid), Output: rs})
	select {
	case <-rs.ready:
	case err := <-ch:
		return trialOut{fail: fmt.Sprintf("returned before the abort: %v", err)}
	case <-time.After(hangLimit):
		cancel(errors.New("never ready"))
		return trialOut{notReady: true, fail: "not ready after 30 s"}
	}
	time.Sleep(100 * time.Millisecond)
	cancel(errors.New("pibench abort"))
	err, lat, hung := await(ch)
	o := trialOut{lat: lat, hang: hung}
	if !hung && !errors.Is(err, ops.ErrCanceled) {
		o.fail = fmt.Sprintf("want ErrCanceled, got %v", err)
	}
	return o
}

// trials runs f n times, par at once, and counts.
func trials(p *progress, label string, n, par int, f func(i int) trialOut) scenResult {
	r := scenResult{Trials: n}
	var mu sync.Mutex
	var lats []time.Duration
	var next atomic.Int32
	var wg sync.WaitGroup
	done := 0
	for range max(par, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				o := f(i)
				mu.Lock()
				done++
				if o.fail != "" {
					r.Failures++
					if r.FirstFail == "" {
						r.FirstFail = o.fail
					}
				}
				if o.hang {
					r.Hangs++
				}
				if o.notReady {
					r.NotReady++
				}
				if o.lost {
					r.Lost++
				}
				if o.outcome != "" {
					if r.Outcomes == nil {
						r.Outcomes = map[string]int{}
					}
					r.Outcomes[o.outcome]++
				}
				if !o.hang {
					lats = append(lats, o.lat)
				}
				d := done
				mu.Unlock()
				p.tick(label, d, n)
			}
		}()
	}
	wg.Wait()
	s := summarize(lats)
	r.P50Ms, r.P99Ms = s.P50Ms, s.P99Ms
	return r
}

func runFaults(ctx context.Context, o *options) error {
	start := time.Now()
	p := newProgress()
	defer p.done()
	var rows []scenResult
	for _, name := range o.backends {
		if ctx.Err() != nil {
			break
		}
		p.step("%s: opening", name)
		e, err := openEnv(ctx, o, name)
		if err != nil {
			rows = append(rows, scenResult{Backend: name, Scenario: "all", Skipped: err.Error()})
			continue
		}
		rows = append(rows, faultsBackend(ctx, o, p, e)...)
		e.close()
	}
	return writeFaults(o, rows, time.Since(start))
}

func faultsBackend(ctx context.Context, o *options, p *progress, e *env) []scenResult {
	if o.helperOnly {
		return helperFaults(ctx, o, p, e)
	}
	if o.hardening2 {
		return hardening2Faults(ctx, o, p, e)
	}
	if o.hardeningOnly {
		return append(hardeningFaults(ctx, o, p, e), hardening2Faults(ctx, o, p, e)...)
	}
	var rows []scenResult
	few := max(o.trials/10, 5)
	add := func(r scenResult, name string) {
		r.Backend, r.Scenario = e.name, name
		rows = append(rows, r)
	}
	treeScen := func(name string, n int, setsid bool, f func(context.Context, ops.Backend, tagger, int, bool) trialOut) {
		t := newTagger()
		p.step("%s: %s ×%d", e.name, name, n)
		r := trials(p, e.name+" "+name, n, o.parallel, func(i int) trialOut { return f(ctx, e.raw, t, i, setsid) })
		time.Sleep(time.Second) // let asynchronous kills land before counting
		n2, live, err := survivors(ctx, e.raw, t)
		r.Survivors = n2
		if err != nil {
			r.Note = err.Error()
		} else if n2 > 0 {
			r.Note = "e.g. " + live[0]
		}
		add(r, name)
	}
	// The survivor count is only worth something if the listing sees a live
	// tree: check it on one that is running.
	p.step("%s: survivor listing self-check", e.name)
	if n, err := listingSelfCheck(ctx, e.raw); err != nil || n < 2 {
		add(scenResult{Trials: 1, Failures: 1, FirstFail: fmt.Sprintf("the listing saw %d of the 2 live sleeps (%v): survivor counts below are not trustworthy", n, err)}, "survivor listing self-check")
	} else {
		add(scenResult{Trials: 1, Note: fmt.Sprintf("the listing saw %d live processes of a running tree", n)}, "survivor listing self-check")
	}
	treeScen("timeout: sleep 300 & sleep 300 & wait", o.trials, false, timeoutTrial)
	treeScen("timeout: setsid variant", o.trials, true, timeoutTrial)
	treeScen("abort: sleep 300 & sleep 300 & wait", few, false, abortTrial)
	treeScen("abort: setsid variant", few, true, abortTrial)
	p.step("%s: atomic write with an abort mid-write ×%d", e.name, few)
	add(abortWriteScenario(ctx, e, few), "abort mid-WriteFile (8 MiB): old or new content, never partial")
	switch e.name {
	case "docker":
		rows = append(rows, dockerFaults(ctx, o, p, e, max(o.trials/40, 3))...)
	case "ssh":
		rows = append(rows, sshFaults(ctx, o, p, e, max(o.trials/40, 5))...)
	}
	rows = append(rows, helperFaults(ctx, o, p, e)...)
	p.step("%s: escape attempts", e.name)
	rows = append(rows, escapeAttempts(ctx, e)...)
	rows = append(rows, hardeningFaults(ctx, o, p, e)...)
	rows = append(rows, hardening2Faults(ctx, o, p, e)...)
	return rows
}

func listingSelfCheck(ctx context.Context, b ops.Backend) (int, error) {
	t := newTagger()
	cctx, cancel := context.WithCancel(ctx)
	rs := newReadySink()
	ch := runAsync(cctx, b, &ops.Cmd{Command: treeCmd(t, 0, false), Output: rs})
	returned := false
	defer func() {
		cancel()
		if !returned {
			<-ch
		}
	}()
	select {
	case <-rs.ready:
	case err := <-ch:
		returned = true
		return 0, err
	case <-time.After(hangLimit):
		return 0, errors.New("not ready")
	}
	time.Sleep(200 * time.Millisecond)
	out, err := runOut(ctx, b, listScript(t), 60*time.Second)
	n := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "(sleep)") {
			n++
		}
	}
	return n, err
}

// abortWriteScenario cancels WriteFile part way and checks the file holds the
// old or the new content, whole.
func abortWriteScenario(ctx context.Context, e *env, n int) scenResult {
	name := e.path("faults-atomic.bin")
	oldData := pattern(8<<20, 'o')
	newData := pattern(8<<20, 'n')
	return trials(newProgress(), "", n, 1, func(i int) trialOut {
		if err := e.raw.WriteFile(ctx, name, oldData, 0o644); err != nil {
			return trialOut{fail: "setup: " + err.Error()}
		}
		cctx, cancel := context.WithCancel(ctx)
		ch := make(chan error, 1)
		go func() { ch <- e.raw.WriteFile(cctx, name, newData, 0o644) }()
		// Spread the abort over the write's duration.
		time.Sleep(time.Duration(i%10) * 5 * time.Millisecond)
		cancel()
		err, lat, hung := await(ch)
		_ = err
		out := trialOut{lat: lat, hang: hung}
		out.lost, out.fail = checkWhole(ctx, e.raw, name, oldData, newData)
		return out
	})
}

func pattern(n int, c byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = c
		if i%64 == 63 {
			b[i] = '\n'
		}
	}
	return b
}

// checkWhole reads name and reports whether it is neither old nor new.
func checkWhole(ctx context.Context, b ops.Backend, name string, oldData, newData []byte) (bool, string) {
	var got []byte
	var err error
	for range 3 { // the transport may be reconnecting
		if got, err = readAll(ctx, b, name); err == nil {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil {
		return true, "read back: " + err.Error()
	}
	if string(got) == string(oldData) || string(got) == string(newData) {
		return false, ""
	}
	return true, fmt.Sprintf("file is neither old nor new (%d bytes)", len(got))
}

func readAll(ctx context.Context, b ops.Backend, name string) ([]byte, error) {
	rc, err := b.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}
