package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
	sshops "github.com/pi-sandbox/pi-sandbox/ops/ssh"
)

// sshFaults cuts connections through a proxy and restarts sshd under
// running commands and uploads.
func sshFaults(ctx context.Context, o *options, p *progress, e *env, n int) []scenResult {
	var rows []scenResult
	s := e.sshd
	px, err := startProxy(s.Addr())
	if err != nil {
		return []scenResult{{Backend: "ssh", Scenario: "connection cut", Skipped: err.Error()}}
	}
	defer px.Close()
	cfg := s.Config()
	cfg.Port = px.Port()
	cfg.KnownHostsFile = s.KnownHostsFor(e.tb, px.Addr())
	cfg.WorkDir = e.work
	cfg.ShimBinary = o.shim
	pb, err := sshops.New(ctx, cfg)
	if err != nil {
		return []scenResult{{Backend: "ssh", Scenario: "connection cut", Skipped: err.Error()}}
	}
	defer pb.Close()

	// A command running when the connection is cut: the call fails with a
	// transport error, promptly; the next call reconnects; the tree dies.
	t := newTagger()
	p.step("ssh: connection cut mid-command ×%d", n)
	r := trials(p, "ssh cut", n, 1, func(i int) trialOut {
		return inFlightFault(ctx, pb, t, i, px.Cut)
	})
	time.Sleep(2 * time.Second)
	r.Survivors, r.Note = countSurvivors(ctx, e.raw, t)
	r.Backend, r.Scenario = "ssh", "connection cut mid-command (proxy; setsid every other trial), then a call on the same backend"
	rows = append(rows, r)

	// An upload cut part way: the file is old or new, whole.
	name := e.path("faults-cut.bin")
	oldData, newData := pattern(8<<20, 'o'), pattern(8<<20, 'n')
	p.step("ssh: connection cut mid-upload ×%d", n)
	r = trials(p, "ssh cut upload", n, 1, func(i int) trialOut {
		if err := e.raw.WriteFile(ctx, name, oldData, 0o644); err != nil {
			return trialOut{fail: "setup: " + err.Error()}
		}
		px.CutAfter(int64(1+i%8) << 20)
		ch := make(chan error, 1)
		go func() { ch <- pb.WriteFile(ctx, name, newData, 0o644) }()
		werr, lat, hung := await(ch)
		out := trialOut{lat: lat, hang: hung}
		if !hung && werr != nil && !errors.Is(werr, ops.ErrTransport) {
			out.fail = fmt.Sprintf("want success or a transport error, got %v", werr)
		}
		px.CutAfter(1 << 62) // disarm
		out.lost, _ = checkWhole(ctx, e.raw, name, oldData, newData)
		return out
	})
	r.Backend, r.Scenario = "ssh", "connection cut mid-upload (8 MiB, cut after 1–8 MiB): old or new content"
	r.Note = "return time counted from the start of the upload"
	rows = append(rows, r)

	// sshd restarted by the harness (the listener and the per-connection
	// monitor processes killed, a new listener on the same port). OpenSSH's
	// session processes outlive their monitor, so an established connection
	// may carry on: a short command in flight may complete or fail with a
	// transport error; either is fine, a hang is not. The next call works.
	p.step("ssh: sshd restarted mid-command ×%d", n)
	r = trials(p, "ssh restart", n, 1, func(i int) trialOut {
		return restartTrial(ctx, pb, func() { restartSSHD(e) })
	})
	r.Backend, r.Scenario = "ssh", "sshd restarted (listener + monitors) under a 2 s command, then a call on the same backend"
	rows = append(rows, r)

	// Every sshd process of the connections killed (a crash): the call in
	// flight fails with a transport error; the next call reconnects; the
	// orphaned tree must not survive.
	// On a connection of its own: pb's may still be served by session
	// processes that outlived the restart above, which are no longer
	// descendants of the listener and so out of killConnectionProcs' reach.
	cb, err := sshops.New(ctx, cfg)
	if err != nil {
		return append(rows, scenResult{Backend: "ssh", Scenario: "connection processes killed", Skipped: err.Error()})
	}
	defer cb.Close()
	t = newTagger()
	p.step("ssh: connection processes killed mid-command ×%d", n)
	r = trials(p, "ssh crash", n, 1, func(i int) trialOut {
		return inFlightFault(ctx, cb, t, i, func() { killConnectionProcs(e) })
	})
	time.Sleep(2 * time.Second)
	r.Survivors, r.Note = countSurvivors(ctx, e.raw, t)
	r.Backend, r.Scenario = "ssh", "every sshd process of the connections killed mid-command (a crash; setsid every other trial), then a call"
	rows = append(rows, r)
	return rows
}

// restartSSHD restarts the server, turning a harness failure into nothing
// (the next trial's call reports it).
func restartSSHD(e *env) {
	defer func() { recover() }()
	e.sshd.Restart()
}

// restartTrial runs a 2 s command and restarts sshd under it.
func restartTrial(ctx context.Context, b ops.Backend, fault func()) trialOut {
	rs := newReadySink()
	ch := runAsync(ctx, b, &ops.Cmd{Command: "echo ready; sleep 2", Output: rs})
	select {
	case <-rs.ready:
	case err := <-ch:
		return trialOut{fail: fmt.Sprintf("returned before the fault: %v", err)}
	case <-time.After(hangLimit):
		return trialOut{notReady: true, fail: "not ready"}
	}
	fault()
	err, lat, hung := await(ch)
	out := trialOut{lat: lat, hang: hung}
	switch {
	case hung:
		out.fail = "the call in flight did not return within " + hangLimit.String()
	case err == nil:
		out.outcome = "in-flight call completed"
	case errors.Is(err, ops.ErrTransport):
		out.outcome = "in-flight call failed with a transport error"
	default:
		out.fail = fmt.Sprintf("want success or a transport error, got %v", err)
	}
	out.checkNextCall(ctx, b, "after the restart")
	return out
}

// killConnectionProcs kills every sshd process serving a connection of the
// test server (the per-connection monitors and their session processes),
// leaving the listener, as a crash of those processes would. Only sshd
// processes of this server are touched: descendants of its listener, which
// is found by its config path.
func killConnectionProcs(e *env) {
	cfg := filepath.Join(e.sshd.Dir, "sshd_config")
	procs := readProcs()
	listener := 0
	for pid, pr := range procs {
		if strings.Contains(pr.cmdline, cfg) && pr.comm == "sshd" {
			listener = pid
		}
	}
	if listener == 0 {
		return
	}
	var kill []int
	var walk func(ppid int)
	walk = func(ppid int) {
		for pid, pr := range procs {
			if pr.ppid == ppid && pr.comm == "sshd" {
				kill = append(kill, pid)
				walk(pid)
			}
		}
	}
	walk(listener)
	for _, pid := range kill {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

type procInfo struct {
	ppid          int
	comm, cmdline string
}

func readProcs() map[int]procInfo {
	m := map[int]procInfo{}
	ents, _ := os.ReadDir("/proc")
	for _, en := range ents {
		pid, err := strconv.Atoi(en.Name())
		if err != nil {
			continue
		}
		st, err := os.ReadFile(filepath.Join("/proc", en.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(st)
		i, j := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if i < 0 || j < i {
			continue
		}
		f := strings.Fields(s[j+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		c, _ := os.ReadFile(filepath.Join("/proc", en.Name(), "cmdline"))
		m[pid] = procInfo{ppid: ppid, comm: s[i+1 : j], cmdline: strings.ReplaceAll(string(c), "\x00", " ")}
	}
	return m
}

// inFlightFault starts a tree, applies fault once it is ready, and expects a
// prompt transport error, then a working next call.
func inFlightFault(ctx context.Context, b ops.Backend, t tagger, i int, fault func()) trialOut {
	rs := newReadySink()
	ch := runAsync(ctx, b, &ops.Cmd{Command: treeCmd(t, i, i%2 == 1), Output: rs})
	select {
	case <-rs.ready:
	case err := <-ch:
		return trialOut{fail: fmt.Sprintf("returned before the fault: %v", err)}
	case <-time.After(hangLimit):
		return trialOut{notReady: true, fail: "not ready"}
	}
	fault()
	err, lat, hung := await(ch)
	out := trialOut{lat: lat, hang: hung}
	if hung {
		out.fail = "the call in flight did not return within " + hangLimit.String()
	}
	if !hung && !errors.Is(err, ops.ErrTransport) {
		out.fail = fmt.Sprintf("want a transport error, got %v", err)
	}
	// The next call reconnects (one reconnect attempt per call).
	out.checkNextCall(ctx, b, "after the fault")
	return out
}

func countSurvivors(ctx context.Context, b ops.Backend, t tagger) (int, string) {
	n, live, err := survivors(ctx, b, t)
	if err != nil {
		return n, err.Error()
	}
	if n > 0 {
		return n, "e.g. " + live[0]
	}
	return 0, ""
}

// checkNextCall runs one more command on b after a fault: it must return
// (a reconnect is allowed) and succeed. The first failure recorded wins.
func (out *trialOut) checkNextCall(ctx context.Context, b ops.Backend, when string) {
	next, _, hung := await(runAsync(ctx, b, &ops.Cmd{Command: "true", Timeout: 20 * time.Second}))
	if hung {
		out.hang = true
		if out.fail == "" {
			out.fail = "the next call did not return within " + hangLimit.String()
		}
	} else if next != nil && out.fail == "" {
		out.fail = fmt.Sprintf("next call %s: %v", when, next)
	}
}
