package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/ssh/sshtest"
)

// The helper figures: every in-process op on the helper beside the
// same op on the old path (NoHelper: one exec per op on docker, SFTP and a
// session per command on ssh, in-process locally), the first call of a
// session, and ssh for a remote user whose ~/.bashrc sleeps 300 ms.

// slowRC is what a slow ~/.bashrc does.
const slowRC = "sleep 0.3"

// firstCallRow is New plus the first call of a session, beside the
// transport's own cost of one process (docker exec true, ssh true on a
// fresh connection).
type firstCallRow struct {
	Path     string  `json:"path"` // "helper" or "no helper"
	Stats    stats   `json:"stats"`
	New      stats   `json:"newOnly"` // New alone (includes the helper's start)
	Baseline string  `json:"baseline"`
	Base     stats   `json:"baselineStats"`
	OverMs   float64 `json:"overBaselineMs"`
	Err      string  `json:"error,omitempty"`
}

// slowRCStats is bash true for the slow-bashrc user.
type slowRCStats struct {
	First    []firstCallRow `json:"firstCall"`
	Helper   stats          `json:"helperBashTrue"`
	NoHelper stats          `json:"noHelperBashTrue"`
	Baseline string         `json:"baseline"`
	Base     stats          `json:"baselineStats"`
	Serve    *serveStats    `json:"serve,omitempty"`
	Err      string         `json:"error,omitempty"`
}

// openNoHelper opens the same target as e with NoHelper set, confined and
// with the tools, for the side-by-side rows.
func openNoHelper(ctx context.Context, e *env) (*env, error) {
	spec := e.spec
	spec.NoHelper = true
	b, err := openBackend(ctx, spec)
	if err != nil {
		return nil, err
	}
	nh := &env{name: e.name, raw: b, spec: spec, sshd: e.sshd, container: e.container, user: e.user}
	nh.closers = append(nh.closers, func() { b.Close() })
	if b.Info().Has("helper") {
		nh.close()
		return nil, fmt.Errorf("NoHelper backend reports the helper")
	}
	if err := nh.wrap(ctx); err != nil {
		nh.close()
		return nil, err
	}
	return nh, nil
}

// firstCall times opening spec's backend and running `true` on it, closing
// it after, reps times.
func firstCall(ctx context.Context, p *progress, label string, reps int, spec childSpec) (stats, stats) {
	var news []time.Duration
	st := timeN(p, label, reps, func(i int) error {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		t := time.Now()
		b, err := openBackend(cctx, spec)
		if err != nil {
			return err
		}
		if i >= 0 {
			news = append(news, time.Since(t))
		}
		defer b.Close()
		if want := !spec.NoHelper && spec.Shim != ""; want && !b.Info().Has("helper") {
			return fmt.Errorf("no helper: %s", strings.Join(b.Info().Limits, "; "))
		}
		return b.Run(cctx, &ops.Cmd{Command: "true"})
	})
	return st, summarize(news)
}

// firstCalls measures the first call of a session on e's target with and
// without the helper, beside one baseline process.
func firstCalls(ctx context.Context, o *options, p *progress, e *env, spec childSpec, baseName string, base func(context.Context) error) []firstCallRow {
	reps := 10
	if o.quick {
		reps = 5
	}
	p.step("%s: first call baseline %s ×%d", e.name, baseName, reps)
	var bst stats
	if base != nil {
		bst = timeN(p, "first base", reps, func(int) error { return base(ctx) })
	}
	var rows []firstCallRow
	for _, nh := range []bool{false, true} {
		s := spec
		s.NoHelper = nh
		path := "helper"
		if nh {
			path = "no helper"
		}
		p.step("%s: first call (New + bash true), %s ×%d", e.name, path, reps)
		st, nst := firstCall(ctx, p, e.name+" first "+path, reps, s)
		r := firstCallRow{Path: path, Stats: st, New: nst, Baseline: baseName, Base: bst}
		if st.N > 0 && bst.N > 0 {
			r.OverMs = st.P50Ms - bst.P50Ms
		}
		if st.N == 0 {
			r.Err = st.Err
		}
		rows = append(rows, r)
	}
	return rows
}

// firstCallBaseline is one process through the plain transport.
func firstCallBaseline(e *env) (string, func(context.Context) error) {
	switch e.name {
	case "docker":
		return "docker exec true", func(ctx context.Context) error {
			_, err := runExt(ctx, nil, "docker", e.dockerExec(false, "true")...)
			return err
		}
	case "ssh":
		fresh := []string{"-o", "ControlMaster=no", "-o", "ControlPath=none"}
		return "ssh true (fresh connection)", func(ctx context.Context) error {
			_, err := runExt(ctx, nil, "ssh", e.sshArgs(fresh, "true")...)
			return err
		}
	case "k8s":
		return "kubectl exec true", func(ctx context.Context) error {
			_, err := runExt(ctx, nil, e.kubectl, e.kubectlExec(false, "true")...)
			return err
		}
	case "local":
		return "sh -c true", func(ctx context.Context) error {
			_, err := runExt(ctx, nil, "sh", "-c", "true")
			return err
		}
	}
	return "", nil
}

// slowRCBench starts a second sshd whose throwaway user's ~/.bashrc sleeps
// 300 ms, and measures bash true with and without the helper, against the
// OpenSSH client with a ControlMaster (which runs the rc file every time),
// and inside one `pi-sandbox serve` session.
func slowRCBench(ctx context.Context, o *options, p *progress) (res *slowRCStats) {
	res = &slowRCStats{}
	tb := &harnessTB{}
	defer tb.close()
	var err error
	defer func() {
		if err != nil {
			res.Err = err.Error()
		}
	}()
	defer catch(&err)
	p.step("ssh slow-bashrc: starting a second sshd (user ~/.bashrc: %s)", slowRC)
	s := sshtest.StartWith(tb, sshtest.Options{BashRC: slowRC})
	if !s.Dedicated {
		return &slowRCStats{Err: "no throwaway user (not root): the rc file cannot be set"}
	}
	work := s.TempDir(tb)
	e := &env{name: "ssh", sshd: s, work: work, tb: tb}
	e.spec = childSpec{Backend: "ssh", WorkDir: work, SSH: s.Config(), Shim: o.shim}
	e.cli = []string{"--backend", "ssh", "--host", fmt.Sprintf("%s@%s", s.User, s.Addr()),
		"--identity", s.IdentityFile, "--known-hosts", s.KnownHostsFile, "--workdir", work}
	base, bf := firstCallBaseline(e)
	res.First = firstCalls(ctx, o, p, e, e.spec, base, bf)
	n := o.cliN
	b, err := openBackend(ctx, e.spec)
	if err != nil {
		return res
	}
	e.raw = b
	defer b.Close()
	if err = e.wrap(ctx); err != nil {
		return res
	}
	p.step("ssh slow-bashrc: bash true, helper ×%d", o.n)
	res.Helper = timeN(p, "slowrc helper", o.n, func(int) error {
		_, err := callTool(ctx, e.lp, "bash", `{"command":"true"}`)
		return err
	})
	nh, err := openNoHelper(ctx, e)
	if err != nil {
		return res
	}
	defer nh.close()
	p.step("ssh slow-bashrc: bash true, no helper ×%d", n)
	res.NoHelper = timeN(p, "slowrc nohelper", n, func(int) error {
		_, err := callTool(ctx, nh.lp, "bash", `{"command":"true"}`)
		return err
	})
	cm := controlArgs(e)
	if _, err = runExt(ctx, nil, "ssh", e.sshArgs(cm, "true")...); err != nil {
		return res
	}
	defer runExt(context.Background(), nil, "ssh", e.sshArgs(append(cm, "-O", "exit"))...)
	res.Baseline = "ssh (ControlMaster) true"
	p.step("ssh slow-bashrc: baseline %s ×%d", res.Baseline, n)
	res.Base = timeN(p, "slowrc base", n, func(int) error {
		_, err := runExt(ctx, nil, "ssh", e.sshArgs(cm, "true")...)
		return err
	})
	res.Serve = serveBench(ctx, o, p, e, map[string]stats{"true": res.Base}, map[string]string{"true": res.Baseline})
	err = nil
	return res
}

// timedSince is the time since t in milliseconds.
func timedSince(t time.Time) float64 { return ms(time.Since(t)) }
