package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// cpStats is the checkpoints section: the CLI's checkpoint, diff and
// restore on the local backend over a copy of Go's src tree, each against
// the git command that does the same on an identical copy, in the same
// run, alternating sample by sample.
type cpStats struct {
	Files   int      `json:"files"`
	Rows    []netRow `json:"rows,omitempty"`
	CLIRSS  float64  `json:"firstCheckpointPeakRSSMiB,omitempty"`
	GitRSS  float64  `json:"gitAddCommitPeakRSSMiB,omitempty"`
	Err     string   `json:"error,omitempty"`
	Samples int      `json:"samples"`
}

const (
	cpFirstTarget   = 1.0 // first checkpoint ÷ git add -A && git commit in a fresh repo
	cpIncrTarget    = 0.3 // checkpoint after 10 changes ÷ git add -A && git commit
	cpDiffTarget    = 1.0 // diff --name-status ÷ git status --porcelain
	cpRestoreTarget = 1.0 // restore of 10 changed files ÷ git checkout -f . && git clean -fdq
)

// cpBench runs the checkpoints section.
func cpBench(ctx context.Context, o *options, p *progress) *cpStats {
	cs := &cpStats{Samples: 7}
	if o.quick {
		cs.Samples = 3
	}
	tmp, err := os.MkdirTemp("", "pibench-cp-")
	if err != nil {
		cs.Err = err.Error()
		return cs
	}
	defer os.RemoveAll(tmp)
	src, err := goSrc(ctx)
	if err != nil {
		cs.Err = err.Error()
		return cs
	}
	ws, repo := filepath.Join(tmp, "ws"), filepath.Join(tmp, "repo")
	p.step("checkpoints: copying %s twice", src)
	for _, d := range []string{ws, repo} {
		if out, err := exec.CommandContext(ctx, "cp", "-a", src, d).CombinedOutput(); err != nil {
			cs.Err = fmt.Sprintf("cp -a %s: %v: %s", src, err, out)
			return cs
		}
	}
	cs.Files = countFiles(ws)
	state := func(i int) string { return filepath.Join(tmp, fmt.Sprintf("state-%d", i)) }
	pi := func(st string, args ...string) (*os.ProcessState, error) {
		cmd := exec.CommandContext(ctx, o.bin, append(args, "--workdir", ws)...)
		cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+st)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return cmd.ProcessState, fmt.Errorf("pi-sandbox %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return cmd.ProcessState, nil
	}
	git := func(args ...string) (*os.ProcessState, error) {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "user.name=bench", "-c", "user.email=bench@localhost", "-c", "gc.auto=0"}, args...)...)
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		if err != nil {
			return cmd.ProcessState, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return cmd.ProcessState, nil
	}
	gitSh := func(script string) error {
		cmd := exec.CommandContext(ctx, "sh", "-c", script)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@localhost", "GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@localhost")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v: %s", script, err, out)
		}
		return nil
	}
	changed := pickFiles(ws, 10)
	round := 0
	change := func() {
		round++
		for _, f := range changed {
			for _, root := range []string{ws, repo} {
				if fh, err := os.OpenFile(filepath.Join(root, f), os.O_WRONLY|os.O_APPEND, 0); err == nil {
					fmt.Fprintf(fh, "\n// bench change %d\n", round)
					fh.Close()
				}
			}
		}
	}
	timed := func(f func() (*os.ProcessState, error)) (time.Duration, error) {
		t0 := time.Now()
		_, err := f()
		return time.Since(t0), err
	}
	type pair struct {
		name, op, base, target string
		limit                  float64
		prep                   func(i int) error
		ours, theirs           func(i int) (*os.ProcessState, error)
	}
	rows := []pair{
		{"checkpoint first", "checkpoint (a fresh store)", "git add -A && git commit -q (a fresh repo)", fmt.Sprintf("≤ %.1f×", cpFirstTarget), cpFirstTarget,
			func(i int) error {
				os.RemoveAll(filepath.Join(repo, ".git"))
				_, err := git("init", "-q")
				return err
			},
			func(i int) (*os.ProcessState, error) { return pi(state(i), "checkpoint") },
			func(i int) (*os.ProcessState, error) {
				if ps, err := git("add", "-A"); err != nil {
					return ps, err
				}
				return git("commit", "-q", "-m", "first")
			}},
		{"checkpoint after 10 changes", "checkpoint after 10 files changed", "git add -A && git commit -q", fmt.Sprintf("≤ %.1f×", cpIncrTarget), cpIncrTarget,
			func(i int) error { change(); return nil },
			func(i int) (*os.ProcessState, error) { return pi(state(0), "checkpoint") },
			func(i int) (*os.ProcessState, error) { return nil, gitSh("git add -A && git commit -q -m next") }},
		{"diff --name-status", "diff --name-status (10 files changed)", "git status --porcelain", fmt.Sprintf("≤ %.1f×", cpDiffTarget), cpDiffTarget,
			func(i int) error {
				if i == 0 {
					change()
				}
				return nil
			},
			func(i int) (*os.ProcessState, error) { return pi(state(0), "diff", "--name-status") },
			func(i int) (*os.ProcessState, error) { return git("status", "--porcelain") }},
		{"restore 10 files", "restore of 10 changed files", "git checkout -f . && git clean -fdq", fmt.Sprintf("≤ %.1f×", cpRestoreTarget), cpRestoreTarget,
			func(i int) error { change(); return nil },
			func(i int) (*os.ProcessState, error) { return pi(state(0), "restore", "bench-base") },
			func(i int) (*os.ProcessState, error) { return nil, gitSh("git checkout -q -f . && git clean -fdq") }},
	}
	// Peak RSS of a first checkpoint and of git add + commit, once each,
	// under /usr/bin/time (a child's ru_maxrss counts the parent it was
	// forked from: this process's, not the command's).
	if _, err := os.Stat("/usr/bin/time"); err == nil {
		os.RemoveAll(filepath.Join(repo, ".git"))
		git("init", "-q")
		cs.CLIRSS, _ = peakRSS(ctx, "", []string{"XDG_STATE_HOME=" + filepath.Join(tmp, "state-rss")}, o.bin, "checkpoint", "--workdir", ws)
		a, _ := peakRSS(ctx, repo, nil, "git", "add", "-A")
		b, _ := peakRSS(ctx, repo, nil, "git", "-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-q", "-m", "rss")
		cs.GitRSS = max(a, b)
	}
	for ri, r := range rows {
		if ctx.Err() != nil {
			break
		}
		if ri == 3 { // restore's target: a named checkpoint of the state git has committed
			if _, err := pi(state(0), "checkpoint", "--name", "bench-base"); err != nil {
				cs.Err = err.Error()
				return cs
			}
			if err := gitSh("git add -A && git commit -q -m base"); err != nil {
				cs.Err = err.Error()
				return cs
			}
		}
		row := netRow{Name: "checkpoints: " + r.name, Op: r.op, Unit: "ms", Baseline: r.base, Target: r.target}
		var ours, theirs []time.Duration
		p.step("checkpoints: %s ×%d", r.name, cs.Samples)
		for i := 0; i < cs.Samples; i++ {
			if err := r.prep(i); err != nil {
				row.Errs++
				row.Err = err.Error()
				continue
			}
			d, err := timed(func() (*os.ProcessState, error) { return r.ours(i) })
			if err != nil {
				row.Errs++
				row.Err = err.Error()
				continue
			}
			ours = append(ours, d)
			if d, err = timed(func() (*os.ProcessState, error) { return r.theirs(i) }); err != nil {
				row.Errs++
				row.Err = err.Error()
				continue
			}
			theirs = append(theirs, d)
		}
		fillRow(&row, ours, theirs, r.limit)
		cs.Rows = append(cs.Rows, row)
	}
	if (o.has("docker") || o.checkpointOnly) && ctx.Err() == nil {
		cs.Rows = append(cs.Rows, cpForkRow(ctx, o, p, 3))
	}
	return cs
}

// peakRSS runs argv in dir under GNU time and returns its peak RSS in MiB.
func peakRSS(ctx context.Context, dir string, env []string, argv ...string) (float64, error) {
	wrapped, peakKiB, done := underTime(argv)
	defer done()
	cmd := exec.CommandContext(ctx, wrapped[0], wrapped[1:]...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, out)
	}
	kib := peakKiB()
	if kib < 0 {
		return 0, fmt.Errorf("%s: no peak RSS from GNU time", strings.Join(argv, " "))
	}
	return float64(kib) / 1024, nil
}

// countFiles counts the regular files under dir.
func countFiles(dir string) int {
	n := 0
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			n++
		}
		return nil
	})
	return n
}

// pickFiles returns n .go files under dir, spread over the tree (paths
// relative to dir).
func pickFiles(dir string, n int) []string {
	var all []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && strings.HasSuffix(p, ".go") {
			rel, _ := filepath.Rel(dir, p)
			all = append(all, rel)
		}
		return nil
	})
	var out []string
	for i := 0; i < n && len(all) > 0; i++ {
		out = append(out, all[i*len(all)/n])
	}
	return out
}

const cpForkTarget = 3.0 // fork --pool P --count 8 ÷ fork --pool P --count 1

// cpForkRow measures fork from a docker pool: 8 sandboxes against 1, each
// sample after the pool was filled (not timed), the forks removed after.
func cpForkRow(ctx context.Context, o *options, p *progress, samples int) netRow {
	row := netRow{Name: "checkpoints: fork --pool --count 8", Op: "fork --pool P --count 8 (docker, " + o.poolImage + ")", Unit: "ms",
		Baseline: "fork --pool P --count 1", Target: fmt.Sprintf("≤ %.0f×", cpForkTarget)}
	run := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, o.bin, args...).Output()
		if err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				return "", fmt.Errorf("pi-sandbox %s: %v: %s", strings.Join(args, " "), err, ee.Stderr)
			}
			return "", err
		}
		return string(out), nil
	}
	fail := func(err error) netRow {
		row.Errs++
		row.Err = err.Error()
		row.Status = statusN(false, false)
		return row
	}
	out, err := run("up", "--image", o.poolImage)
	if err != nil {
		return fail(err)
	}
	src := strings.TrimSpace(out)
	defer run("down", src)
	if _, err := run("tool", "bash", `{"command":"mkdir -p app && seq 1 1000 > app/data && echo ok > app/README"}`, "--container", src); err != nil {
		return fail(err)
	}
	if _, err := run("checkpoint", "--name", "bench-fork", "--container", src); err != nil {
		return fail(err)
	}
	pool := fmt.Sprintf("pibench-fork-%d", os.Getpid())
	defer run("pool", "drain", pool)
	var one, eight []time.Duration
	fork := func(n int) (time.Duration, error) {
		if _, err := run("pool", "fill", pool, "--size", "9", "--image", o.poolImage); err != nil {
			return 0, err
		}
		t0 := time.Now()
		out, err := run("fork", "--pool", pool, "--count", fmt.Sprint(n), "bench-fork", "--container", src)
		d := time.Since(t0)
		ids := strings.Fields(out)
		if len(ids) > 0 {
			run(append([]string{"down"}, ids...)...)
		}
		if err == nil && len(ids) != n {
			err = fmt.Errorf("fork --count %d printed %d ids", n, len(ids))
		}
		return d, err
	}
	for i := 0; i < samples && ctx.Err() == nil; i++ {
		p.step("checkpoints: fork --pool --count 1 and 8, sample %d of %d", i+1, samples)
		d, err := fork(1)
		if err != nil {
			return fail(err)
		}
		one = append(one, d)
		if d, err = fork(8); err != nil {
			return fail(err)
		}
		eight = append(eight, d)
	}
	fillRow(&row, eight, one, cpForkTarget)
	return row
}
