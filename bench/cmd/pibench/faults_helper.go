package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// The helper's lifecycle under faults: the CLI killed, the helper
// killed, a paused container, a restart, a replaced binary, 300 concurrent
// calls, a slow consumer. What goes on in the target is looked at through a
// probe that does not use the backend under test: `docker exec -u 0` for
// docker, this machine's /proc for ssh (the test sshd is local) and local.

// probe runs a shell script in e's target, outside the backend.
func probe(ctx context.Context, e *env, script string) (string, error) {
	return probeAs(ctx, e, "0", script)
}

// probeAs is probe as a user of the container (docker; elsewhere this
// machine's root). The container's root has no capabilities (CapDrop ALL):
// killing the sandbox user's processes and writing its files take that user.
func probeAs(ctx context.Context, e *env, user, script string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var cmd *exec.Cmd
	if e.name == "docker" {
		cmd = exec.CommandContext(ctx, "docker", "exec", "-u", user, e.container, "sh", "-c", script)
	} else {
		cmd = exec.CommandContext(ctx, "sh", "-c", script)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("probe: %v: %s", err, firstLine(errb.String()))
	}
	return out.String(), nil
}

// helperScript prints "helper PID" for the `__shim serve` ancestor of each
// live process carrying t's tag (locally: the `pi-sandbox tool` process, in
// which the helper runs), "live PID" for each such process, and "helpers N"
// for the number of helpers in the target. The bracket keeps the probe's
// own command line from matching.
func helperScript(t tagger, local bool) string {
	ancestor := "__shim [s]erve"
	if local {
		ancestor = " [t]ool --backend local "
	}
	return fmt.Sprintf(`for f in $(grep -l -a -e '%s' /proc/[0-9]*/cmdline 2>/dev/null); do
  d=${f%%/cmdline}; p=${d#/proc/}
  st=$(cat $d/stat 2>/dev/null) || continue
  set -- ${st##*) }; [ "$1" = Z ] && continue
  echo "live $p"; echo "proc $p $(tr '\0' ' ' < $d/cmdline | cut -c1-120) ppid=$2 state=$1"
  while [ -n "$p" ] && [ "$p" -gt 1 ]; do
    if tr '\0' ' ' < /proc/$p/cmdline 2>/dev/null | grep -q '%s'; then echo "helper $p"; break; fi
    st=$(cat /proc/$p/stat 2>/dev/null) || break; set -- ${st##*) }; p=$2
  done
done
n=0; for f in /proc/[0-9]*/cmdline; do
  tr '\0' ' ' < $f 2>/dev/null | grep -q '^[^ ]* __shim [s]erve' || continue
  st=$(cat ${f%%/cmdline}/stat 2>/dev/null) || continue; set -- ${st##*) }; [ "$1" = Z ] && continue
  n=$((n+1)); echo "anyhelper ${f%%/cmdline}"
done; echo "helpers $n"; echo end`, t.pattern(), ancestor)
}

// targetView is what helperScript saw.
type targetView struct {
	live    int
	procs   []string // "proc PID CMDLINE ppid state" of the live ones
	helper  int      // the tagged tree's helper, 0 if none
	helpers int
	all     []int
}

func look(ctx context.Context, e *env, t tagger) (targetView, error) {
	out, err := probe(ctx, e, helperScript(t, e.name == "local"))
	var v targetView
	if err != nil {
		return v, err
	}
	if !strings.Contains(out, "end") {
		return v, fmt.Errorf("probe: incomplete output %q", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "proc ") {
			v.procs = append(v.procs, strings.TrimPrefix(line, "proc "))
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		switch f[0] {
		case "live":
			v.live++
		case "helper":
			v.helper, _ = strconv.Atoi(f[1])
		case "helpers":
			v.helpers, _ = strconv.Atoi(f[1])
		case "anyhelper":
			n, _ := strconv.Atoi(strings.TrimPrefix(f[1], "/proc/"))
			v.all = append(v.all, n)
		}
	}
	return v, nil
}

// waitView polls look until cond holds or d passes; it returns the last view
// and how long it took.
func waitView(ctx context.Context, e *env, t tagger, d time.Duration, cond func(targetView) bool) (targetView, time.Duration, error) {
	start := time.Now()
	for {
		v, err := look(ctx, e, t)
		if err == nil && cond(v) {
			return v, time.Since(start), nil
		}
		if time.Since(start) > d {
			return v, time.Since(start), err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// killIn kills pid in the target with SIGKILL.
func killIn(ctx context.Context, e *env, pid int) error {
	if e.name == "docker" {
		_, err := probeAs(ctx, e, e.user, fmt.Sprintf("kill -9 %d", pid))
		return err
	}
	return syscall.Kill(pid, syscall.SIGKILL)
}

// cleanTagged kills what is left of t's trees (after a failed trial).
func cleanTagged(ctx context.Context, e *env, t tagger) {
	user := "0"
	if e.name == "docker" {
		user = e.user
	}
	probeAs(ctx, e, user, fmt.Sprintf(`for f in $(grep -l -a -e '%s' /proc/[0-9]*/cmdline 2>/dev/null); do d=${f%%/cmdline}; kill -9 ${d#/proc/} 2>/dev/null; done; true`, t.pattern()))
}

// cliKilledTrial runs a tree through `pi-sandbox tool bash`, kills the CLI
// with SIGKILL once the tree runs, and expects the CLI's helper and the
// tree gone within 3 s.
func cliKilledTrial(ctx context.Context, o *options, e *env, t tagger, i int) trialOut {
	before, err := look(ctx, e, t)
	if err != nil {
		return trialOut{fail: err.Error()}
	}
	args := jsonArgs(map[string]any{"command": treeCmd(t, i, i%2 == 1)})
	cmd := exec.Command(o.bin, append(append([]string{"tool"}, e.cli...), "bash", args)...)
	stderr := &tailBuffer{max: 2 << 10}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return trialOut{fail: "start the CLI: " + err.Error()}
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	v, _, err := waitView(ctx, e, t, hangLimit, func(v targetView) bool { return v.live >= 2 && v.helper != 0 })
	if err != nil || v.live < 2 || v.helper == 0 {
		cmd.Process.Kill()
		<-exited
		cleanTagged(ctx, e, t)
		return trialOut{notReady: true, fail: fmt.Sprintf("the tree did not start under a helper (%d live, helper %d, %v): %s", v.live, v.helper, err, stderr)}
	}
	helper := v.helper
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	gone := func(v targetView) bool {
		if v.live > 0 {
			return false
		}
		for _, p := range v.all {
			if p == helper {
				return false
			}
		}
		return true
	}
	v, d, err := waitView(ctx, e, t, 3*time.Second, gone)
	out := trialOut{lat: d}
	if err != nil || !gone(v) {
		v2, d2, _ := waitView(ctx, e, t, 20*time.Second, gone)
		out.fail = fmt.Sprintf("3 s after SIGKILL of the CLI: %d tree processes live, helper %d alive=%v; after %.1f s: %d live, helpers %d (before the CLI: %d)",
			v.live, helper, !gone(targetView{all: v.all}), d2.Seconds(), v2.live, v2.helpers, before.helpers)
		cleanTagged(ctx, e, t)
	}
	return out
}

// helperKilledTrial kills the helper under a running tree: the call fails
// with a transport error within 2 s, the tree dies, the next call works.
func helperKilledTrial(ctx context.Context, e *env, t tagger, i int) trialOut {
	rs := newReadySink()
	ch := runAsync(ctx, e.raw, &ops.Cmd{Command: treeCmd(t, i, i%2 == 1), Output: rs})
	select {
	case <-rs.ready:
	case err := <-ch:
		return trialOut{fail: fmt.Sprintf("returned before the fault: %v", err)}
	case <-time.After(hangLimit):
		return trialOut{notReady: true, fail: "not ready"}
	}
	v, _, err := waitView(ctx, e, t, 10*time.Second, func(v targetView) bool { return v.live >= 2 && v.helper != 0 })
	if err != nil || v.helper == 0 {
		return trialOut{fail: fmt.Sprintf("no helper above the tree (%d live): %v", v.live, err)}
	}
	if err := killIn(ctx, e, v.helper); err != nil {
		return trialOut{fail: "kill the helper: " + err.Error()}
	}
	err, lat, hung := await(ch)
	out := trialOut{lat: lat, hang: hung}
	switch {
	case hung:
		out.fail = "the call in flight did not return within " + hangLimit.String()
	case !errors.Is(err, ops.ErrTransport):
		out.fail = fmt.Sprintf("want a transport error, got %v", err)
	case lat > 2*time.Second:
		out.fail = fmt.Sprintf("the transport error came %.1f s after the kill (target 2 s)", lat.Seconds())
	}
	if os.Getenv("PIBENCH_DEBUG") != "" {
		fmt.Fprintf(os.Stderr, "helper kill trial %d: helper %d, lat %v, err %v\n", i, v.helper, lat, err)
	}
	tv, _, _ := waitView(ctx, e, t, 3*time.Second, func(v targetView) bool { return v.live == 0 })
	if tv.live > 0 {
		_, d, _ := waitView(ctx, e, t, hangLimit, func(v targetView) bool { return v.live == 0 })
		if out.fail == "" {
			out.fail = fmt.Sprintf("%d processes of the tree alive 3 s after the helper died (gone after %.1f s): %s", tv.live, 3+d.Seconds(), strings.Join(tv.procs, "; "))
		}
	}
	out.checkNextCall(ctx, e.raw, "after the helper was killed")
	return out
}

// concurrentTrial makes 300 calls at once (commands and file operations).
func concurrentTrial(ctx context.Context, e *env, calls int) trialOut {
	var wg sync.WaitGroup
	var mu sync.Mutex
	fails, first := 0, ""
	start := time.Now()
	for k := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
			defer cancel()
			var err error
			switch k % 3 {
			case 0:
				var out string
				if out, err = runOut(cctx, e.raw, fmt.Sprintf("echo c%d", k), 0); err == nil && strings.TrimSpace(out) != fmt.Sprintf("c%d", k) {
					err = fmt.Errorf("output %q", out)
				}
			case 1:
				name := e.path(fmt.Sprintf("conc-%d.txt", k))
				if err = e.raw.WriteFile(cctx, name, []byte(name), 0o644); err == nil {
					var got []byte
					if got, err = readAll(cctx, e.raw, name); err == nil && string(got) != name {
						err = fmt.Errorf("read back %q", got)
					}
				}
			case 2:
				_, err = e.raw.ReadDir(cctx, e.work)
			}
			if err != nil {
				mu.Lock()
				fails++
				if first == "" {
					first = fmt.Sprintf("call %d: %v", k, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	out := trialOut{lat: time.Since(start)}
	if fails > 0 {
		out.fail = fmt.Sprintf("%d of %d calls failed; %s", fails, calls, first)
	}
	return out
}

// fileSum is the sha256 of a file in the target.
func fileSum(ctx context.Context, e *env, path string) string {
	out, _ := probe(ctx, e, "sha256sum "+shq(path)+" 2>/dev/null | cut -d' ' -f1")
	return strings.TrimSpace(out)
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// helperBinary finds the running helper's binary path in the target (its
// argv[0]) by starting a tagged command.
func helperBinary(ctx context.Context, e *env) (string, int, error) {
	t := newTagger()
	cctx, cancel := context.WithCancel(ctx)
	rs := newReadySink()
	ch := runAsync(cctx, e.raw, &ops.Cmd{Command: treeCmd(t, 0, false), Output: rs})
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
		return "", 0, fmt.Errorf("the command ended before it was ready: %v", err)
	case <-time.After(hangLimit):
		return "", 0, errors.New("not ready")
	}
	v, _, err := waitView(ctx, e, t, 10*time.Second, func(v targetView) bool { return v.helper != 0 })
	if err != nil || v.helper == 0 {
		return "", 0, fmt.Errorf("no helper above the tree: %v", err)
	}
	out, err := probe(ctx, e, fmt.Sprintf("tr '\\0' '\\n' < /proc/%d/cmdline | head -n 1", v.helper))
	return strings.TrimSpace(out), v.helper, err
}

// staleShim answers `__shim version` with another version and refuses
// every other mode, as an older or foreign binary at the same path would.
const staleShim = "#!/bin/sh\nif [ \"$2\" = version ]; then echo 'pi-sandbox-shim 0'; exit 0; fi\necho \"pi-sandbox-shim (stale): unknown mode $2\" >&2\nexit 2\n"

// versionMismatch replaces the uploaded binary in the target, kills the
// helper so that the next call starts a new one, and reports what the
// backend does: the calls after, and whether the binary was uploaded again.
func versionMismatch(ctx context.Context, o *options, e *env, variant string) scenResult {
	r := scenResult{Backend: e.name, Trials: 1}
	bin, pid, err := helperBinary(ctx, e)
	if err != nil {
		r.Failures, r.FirstFail = 1, "find the helper: "+err.Error()
		return r
	}
	// A helper run from a file descriptor (ssh: the binary is sent into a
	// memfd) has no file in the target to replace.
	if strings.HasPrefix(bin, "/proc/self/fd/") {
		r.Trials, r.Skipped = 0, "the helper runs from a file descriptor ("+bin+"): no file in the target a process could replace"
		return r
	}
	// Never replace anything but an uploaded shim.
	if !strings.Contains(filepath.Base(bin), "shim") {
		r.Failures, r.FirstFail = 1, "the helper's binary "+bin+" does not look like an uploaded shim; not replaced"
		return r
	}
	want, _ := os.ReadFile(o.shim)
	sum := sha256.Sum256(want)
	wantSum := hex.EncodeToString(sum[:])
	var repl string
	// A new file renamed over the old one (the running helper keeps the old
	// inode; writing into it would fail with ETXTBSY).
	tmp := shq(bin + ".pibench-new")
	switch variant {
	case "stale":
		repl = fmt.Sprintf("cat > %s <<'EOF'\n%sEOF\n", tmp, staleShim)
	case "truncated":
		repl = fmt.Sprintf("head -c 65536 %s > %s\n", shq(bin), tmp)
	}
	repl += fmt.Sprintf("chmod 755 %s && chown --reference=%s %s 2>/dev/null; mv -f %s %s", tmp, shq(bin), tmp, tmp, shq(bin))
	var notes []string
	if _, err := probeAs(ctx, e, e.user, repl); err != nil {
		// Where the sandbox user cannot replace it (17.12: a root-owned
		// upload in a container we made), its owner stands in for a
		// stale upload.
		// A read-only bind mount of the host's helper (a container we
		// made, the engine on this host) cannot be replaced from inside,
		// not even by root.
		if e.name == "docker" && strings.Contains(err.Error(), "Read-only file system") {
			r.Trials, r.Skipped = 0, "the helper runs from the engine's read-only mount of the host's binary ("+bin+"): nothing in the container, root included, can replace it"
			return r
		}
		if e.name != "docker" || !strings.Contains(err.Error(), "Permission denied") {
			r.Failures, r.FirstFail = 1, "replace the binary: "+err.Error()
			return r
		}
		notes = append(notes, "the sandbox user cannot replace it (Permission denied); replaced as its owner, root")
		if _, err := probeAs(ctx, e, "0", repl); err != nil {
			r.Failures, r.FirstFail = 1, "replace the binary as root: "+err.Error()
			return r
		}
	}
	killIn(ctx, e, pid)
	okCalls := 0
	for k := range 3 {
		out, err := runOut(ctx, e.raw, "echo ok", 20*time.Second)
		if err == nil && strings.TrimSpace(out) == "ok" {
			okCalls++
			notes = append(notes, fmt.Sprintf("call %d: ok", k+1))
		} else {
			notes = append(notes, fmt.Sprintf("call %d: %v", k+1, err))
		}
	}
	// The new helper must run the right binary: uploaded again at the old
	// path, or at a fresh one.
	nb, _, herr := helperBinary(ctx, e)
	got := fileSum(ctx, e, bin)
	running := ""
	reup := "the binary at the old path was not restored"
	if got == wantSum {
		reup = "the binary at the old path was uploaded again (content matches)"
	}
	if herr == nil {
		running = fileSum(ctx, e, nb)
		if nb != bin {
			reup += "; the new helper runs a fresh upload " + nb
			if running == wantSum {
				reup += " (content matches)"
			}
		}
		notes = append(notes, "helper running again")
	} else {
		notes = append(notes, "no helper afterwards: "+herr.Error()+"; "+strings.Join(e.raw.Info().Limits, "; "))
	}
	r.Note = strings.Join(append(notes, reup), "; ")
	if okCalls < 2 || running != wantSum || herr != nil {
		r.Failures = 1
		r.FirstFail = "not re-uploaded and restarted"
	}
	// Put the right binary back for what follows.
	if got != wantSum {
		restoreShim(ctx, e, bin, want)
	}
	return r
}

// restoreShim writes data to path in the target.
func restoreShim(ctx context.Context, e *env, path string, data []byte) {
	script := fmt.Sprintf("cat > %s.pibench-new && chmod 755 %s.pibench-new && chown --reference=%s %s.pibench-new 2>/dev/null; mv -f %s.pibench-new %s", shq(path), shq(path), shq(path), shq(path), shq(path), shq(path))
	if e.name == "docker" {
		if _, err := runExt(ctx, data, "docker", "exec", "-i", "-u", e.user, e.container, "sh", "-c", script); err != nil {
			runExt(ctx, data, "docker", "exec", "-i", "-u", "0", e.container, "sh", "-c", script)
		}
		return
	}
	runExt(ctx, data, "sh", "-c", script)
}

// helperFaults are the helper's lifecycle scenarios on e.
func helperFaults(ctx context.Context, o *options, p *progress, e *env) []scenResult {
	if !e.raw.Info().Has("helper") {
		return []scenResult{{Backend: e.name, Scenario: "helper lifecycle", Skipped: "the backend does not run on the helper: " + strings.Join(e.raw.Info().Limits, "; ")}}
	}
	var rows []scenResult
	n := max(o.trials/40, 3)
	add := func(r scenResult, name string) {
		r.Backend, r.Scenario = e.name, name
		rows = append(rows, r)
	}
	t := newTagger()
	p.step("%s: CLI killed (SIGKILL) mid-command ×%d", e.name, n)
	r := trials(p, e.name+" cli kill", n, 1, func(i int) trialOut { return cliKilledTrial(ctx, o, e, t, i) })
	r.Survivors = hostOrTargetSurvivors(ctx, e, t)
	r.Note = "return = SIGKILL of `pi-sandbox tool bash` to its helper and tree gone (target 3 s)"
	if e.name == "local" {
		r.Note = "return = SIGKILL of `pi-sandbox tool bash`, in which the helper runs, to the tree gone (target 3 s)"
	}
	add(r, "helper: CLI killed with SIGKILL mid-command → the helper and the tree gone")
	if e.name == "local" {
		add(scenResult{Skipped: "the helper runs in the client's own process (shim.InProcess): killing it is killing the client, the row above"},
			"helper killed in the target mid-command → transport error, tree gone, next call works")
	} else {
		t := newTagger()
		p.step("%s: helper killed mid-command ×%d", e.name, n)
		r := trials(p, e.name+" helper kill", n, 1, func(i int) trialOut { return helperKilledTrial(ctx, e, t, i) })
		r.Survivors = hostOrTargetSurvivors(ctx, e, t)
		r.Note = "return = SIGKILL of the helper to the transport error (target 2 s)"
		add(r, "helper killed in the target mid-command → transport error, tree gone, next call works")
	}

	p.step("%s: 300 concurrent calls ×2", e.name)
	r = trials(p, e.name+" 300", 2, 1, func(int) trialOut { return concurrentTrial(ctx, e, 300) })
	r.Note = "a third each: echo, write+read back, readdir; return = all 300 done"
	add(r, "helper: 300 concurrent calls → none fails")

	p.step("%s: slow consumer of 1 GiB", e.name)
	rows = append(rows, slowConsumerScenario(ctx, e))

	if e.name != "local" {
		for _, v := range []string{"stale", "truncated"} {
			p.step("%s: version mismatch (%s binary)", e.name, v)
			r := versionMismatch(ctx, o, e, v)
			r.Scenario = "helper binary in the target replaced (" + map[string]string{"stale": "a stale binary answering another version", "truncated": "truncated to 64 KiB"}[v] + "), helper killed → re-upload and restart"
			rows = append(rows, r)
		}
	}
	if e.name == "docker" {
		np := max(o.trials/100, 1)
		t := newTagger()
		p.step("docker: paused %s mid-stream ×%d", pauseFor, np)
		r := trials(p, "docker long pause", np, 1, func(i int) trialOut { return longPauseTrial(ctx, e, t, i) })
		r.Note = "return = after the 5 s timeout"
		add(r, "helper: docker pause 30 s mid-stream (5 s timeout; a call with a 5 s deadline while paused) → timeout fires, paused call reports the pause without an exec, same helper after unpause, next call works")
		p.step("docker: container restarted ×2")
		r = trials(p, "docker restart", 2, 1, func(int) trialOut { return restartTrialDocker(ctx, e) })
		r.Note = "return = first call after the restart"
		add(r, "helper: container restarted between calls → the next call works")
	}
	return rows
}

// hostOrTargetSurvivors counts t's live processes in the target (and kills
// them).
func hostOrTargetSurvivors(ctx context.Context, e *env, t tagger) int {
	v, err := look(ctx, e, t)
	if err != nil {
		return -1
	}
	if v.live > 0 {
		cleanTagged(ctx, e, t)
	}
	return v.live
}
