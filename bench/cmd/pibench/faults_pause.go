package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// pauseFor is how long the long pause lasts.
const pauseFor = 30 * time.Second

// longPauseTrial pauses the container for 30 s under a streaming command
// with a 5 s timeout, and makes a call (5 s deadline) while it is paused.
// Wanted: the timeout fires while paused, the paused call reports the pause
// at its deadline without starting an exec (docker events), the helper is
// the same process after unpause (no session loss), the next call works.
func longPauseTrial(ctx context.Context, e *env, t tagger, i int) trialOut {
	const limit = 5 * time.Second
	rs := newReadySink()
	cmd := fmt.Sprintf("echo ready; while :; do echo line; sleep 0.05; done # %s", t.arg(i, 0))
	start := time.Now()
	ch := runAsync(ctx, e.raw, &ops.Cmd{Command: cmd, Output: rs, Timeout: limit})
	select {
	case <-rs.ready:
	case err := <-ch:
		return trialOut{fail: fmt.Sprintf("returned before the pause: %v", err)}
	case <-time.After(hangLimit):
		return trialOut{notReady: true, fail: "not ready"}
	}
	v, _, err := waitView(ctx, e, t, 10*time.Second, func(v targetView) bool { return v.helper != 0 })
	if err != nil || v.helper == 0 {
		return trialOut{fail: fmt.Sprintf("no helper above the command: %v", err)}
	}
	helper := v.helper
	pauseAt := time.Now()
	if _, err := runExt(ctx, nil, "docker", "pause", e.container); err != nil {
		return trialOut{fail: "docker pause: " + err.Error()}
	}
	unpaused := false
	unpause := func() {
		if !unpaused {
			runExt(context.Background(), nil, "docker", "unpause", e.container)
			unpaused = true
		}
	}
	defer unpause()
	var notes []string
	out := trialOut{}
	fail := func(s string) {
		if out.fail == "" {
			out.fail = s
		}
	}
	// The call made while paused (5 s deadline), watched from here: it must
	// return at its deadline, saying the container is paused.
	time.Sleep(time.Second)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	pstart := time.Now()
	pch := runAsync(pctx, e.raw, &ops.Cmd{Command: "echo while-paused"})
	checkPaused := func(perr error, pd time.Duration) {
		switch {
		case perr == nil:
			fail("a call made while paused succeeded")
		case !strings.Contains(perr.Error(), "paused"):
			fail(fmt.Sprintf("the call made while paused returned after %.1f s without saying so: %v", pd.Seconds(), perr))
		case pd < 4500*time.Millisecond || pd > 7*time.Second:
			fail(fmt.Sprintf("the call made while paused returned after %.1f s, not at its 5 s deadline: %v", pd.Seconds(), perr))
		}
		notes = append(notes, fmt.Sprintf("paused call returned after %.1f s: %v", pd.Seconds(), perr))
	}
	pdone := false
	select {
	case perr := <-pch:
		pdone = true
		checkPaused(perr, time.Since(pstart))
	case <-time.After(7 * time.Second):
		fail("the call made while paused (5 s deadline) had not returned 7 s after it started")
	}
	// The timeout of the call in flight fires while paused.
	select {
	case err := <-ch:
		d := time.Since(start)
		out.lat = max(d-limit, 0)
		var te *ops.TimeoutError
		if !errors.As(err, &te) {
			fail(fmt.Sprintf("the call in flight: want a timeout error, got %v", err))
		}
		if time.Since(pauseAt) >= pauseFor {
			fail("the timeout did not fire during the pause")
		}
		notes = append(notes, fmt.Sprintf("timeout fired %.1f s after start", d.Seconds()))
	case <-time.After(time.Until(pauseAt.Add(pauseFor))):
		fail("the 5 s timeout did not fire during the 30 s pause")
		out.hang = true
	}
	time.Sleep(time.Until(pauseAt.Add(pauseFor)))
	until := time.Now()
	unpause()
	// No exec may have been started into the paused container (the probe
	// ran before the pause; nothing of ours execs during it).
	evs, err := runExt2(ctx, "docker", "events", "--since", eventTime(pauseAt), "--until", eventTime(until),
		"--filter", "container="+e.container, "--filter", "event=exec_create", "--format", "{{.Action}}")
	if err != nil {
		notes = append(notes, "docker events: "+err.Error())
	} else if n := strings.Count(evs, "exec_create"); n > 0 {
		fail(fmt.Sprintf("%d execs created in the paused container", n))
	}
	if !pdone {
		select {
		case perr := <-pch:
			notes = append(notes, fmt.Sprintf("paused call returned %.1f s after it started (%.1f s after unpause): %v", time.Since(pstart).Seconds(), time.Since(until).Seconds(), perr))
		case <-time.After(hangLimit):
			notes = append(notes, "paused call still blocked 30 s after unpause")
			out.hang = true
		}
	}
	out.checkNextCall(ctx, e.raw, "after unpause")
	v, _, _ = waitView(ctx, e, t, 3*time.Second, func(v targetView) bool { return v.live == 0 })
	if v.live > 0 {
		fail(fmt.Sprintf("%d processes of the timed-out command alive 3 s after unpause", v.live))
		cleanTagged(ctx, e, t)
	}
	still := false
	for _, p := range v.all {
		still = still || p == helper
	}
	if !still {
		fail("the helper is not the same process after the pause (session lost)")
	}
	out.outcome = strings.Join(notes, ", ")
	return out
}

// restartTrialDocker restarts the container between two calls: the next
// call works (the helper is started again, the shim restored).
func restartTrialDocker(ctx context.Context, e *env) trialOut {
	if _, err := runOut(ctx, e.raw, "true", 20*time.Second); err != nil {
		return trialOut{fail: "before the restart: " + err.Error()}
	}
	if _, err := runExt(ctx, nil, "docker", "restart", "-t", "1", e.container); err != nil {
		return trialOut{fail: "docker restart: " + err.Error()}
	}
	start := time.Now()
	out := trialOut{}
	got, err := runOut(ctx, e.raw, "echo ok", 30*time.Second)
	out.lat = time.Since(start)
	if err != nil || strings.TrimSpace(got) != "ok" {
		out.fail = fmt.Sprintf("the first call after the restart: %q, %v", got, err)
	}
	if _, err := e.raw.Stat(ctx, e.work); err != nil && out.fail == "" {
		out.fail = "stat after the restart: " + err.Error()
	}
	return out
}

// runExt2 runs a command and returns its stdout.
func runExt2(ctx context.Context, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, name, args...).Output()
	return string(out), err
}

// eventTime is t for docker events --since/--until, to the nanosecond (whole
// seconds would count the probe's exec just before the pause).
func eventTime(t time.Time) string { return fmt.Sprintf("%d.%09d", t.Unix(), t.Nanosecond()) }
