package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

// dockerFaults kills and pauses containers under running commands.
func dockerFaults(ctx context.Context, o *options, p *progress, e *env, n int) []scenResult {
	var rows []scenResult
	// Killed: each trial gets its own container, killed mid-command.
	t := newTagger()
	p.step("docker: container killed mid-command ×%d", n)
	r := trials(p, "docker kill", n, 1, func(i int) trialOut {
		b, err := docker.New(ctx, docker.Config{Image: o.image, Labels: map[string]string{benchLabel: strconv.Itoa(os.Getpid())}, ShimBinary: o.shim})
		if err != nil {
			return trialOut{fail: "open: " + err.Error()}
		}
		defer b.Close()
		rs := newReadySink()
		ch := runAsync(ctx, b, &ops.Cmd{Command: treeCmd(t, i, i%2 == 1), Output: rs})
		select {
		case <-rs.ready:
		case <-time.After(hangLimit):
			return trialOut{notReady: true, fail: "not ready"}
		}
		if _, err := runExt(ctx, nil, "docker", "kill", b.ID()); err != nil {
			return trialOut{fail: "docker kill: " + err.Error()}
		}
		err, lat, hung := await(ch)
		out := trialOut{lat: lat, hang: hung}
		if !hung && (err == nil || !errors.Is(err, ops.ErrTransport)) {
			out.fail = fmt.Sprintf("want a transport error, got %v", err)
		}
		// The next call must fail as clearly, and promptly.
		ch2 := runAsync(ctx, b, &ops.Cmd{Command: "true"})
		err2, _, hung2 := await(ch2)
		if hung2 {
			out.hang = true
		} else if err2 == nil && out.fail == "" {
			out.fail = "a call after the kill succeeded"
		}
		return out
	})
	time.Sleep(time.Second)
	r.Survivors = hostSurvivors(t)
	r.Backend, r.Scenario = "docker", "container killed mid-command (tree; setsid every other trial)"
	r.Note = "survivors counted in the host's /proc: the container is gone"
	rows = append(rows, r)

	// Paused: a command with a 1 s timeout in a container paused for 2 s;
	// a write is attempted during the pause.
	t = newTagger()
	p.step("docker: container paused mid-command ×%d", n)
	name := e.path("faults-pause.bin")
	oldData, newData := pattern(1<<20, 'o'), pattern(1<<20, 'n')
	r = trials(p, "docker pause", n, 1, func(i int) trialOut {
		if err := e.raw.WriteFile(ctx, name, oldData, 0o644); err != nil {
			return trialOut{fail: "setup: " + err.Error()}
		}
		rs := newReadySink()
		ch := runAsync(ctx, e.raw, &ops.Cmd{Command: treeCmd(t, i, i%2 == 1), Output: rs, Timeout: time.Second})
		select {
		case <-rs.ready:
		case <-time.After(hangLimit):
			return trialOut{notReady: true, fail: "not ready"}
		}
		if _, err := runExt(ctx, nil, "docker", "pause", e.container); err != nil {
			return trialOut{fail: "docker pause: " + err.Error()}
		}
		wctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
		wch := make(chan error, 1)
		go func() { wch <- e.raw.WriteFile(wctx, name, newData, 0o644) }()
		time.Sleep(2 * time.Second)
		runExt(ctx, nil, "docker", "unpause", e.container)
		werr, _, whung := await(wch)
		cancel()
		_ = werr
		err, lat, hung := await(ch)
		out := trialOut{lat: lat, hang: hung || whung}
		var te *ops.TimeoutError
		if !hung && !errors.As(err, &te) && !errors.Is(err, ops.ErrTransport) {
			out.fail = fmt.Sprintf("want a timeout or transport error, got %v", err)
		}
		out.lost, _ = checkWhole(ctx, e.raw, name, oldData, newData)
		return out
	})
	time.Sleep(time.Second)
	nsv, live, err := survivors(ctx, e.raw, t)
	r.Survivors = nsv
	r.Backend, r.Scenario = "docker", "container paused 2 s under a 1 s timeout (+ a write during the pause)"
	r.Note = "return time counted from unpause"
	if err != nil {
		r.Note += "; " + err.Error()
	} else if nsv > 0 {
		r.Note += "; e.g. " + live[0]
	}
	rows = append(rows, r)
	return rows
}
