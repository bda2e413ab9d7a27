//go:build unix

package native

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// Timings of the stop sequence. They bound how long Run waits after it has
// decided to stop; they are not grace periods for the command.
const (
	// shimStopWait is how long the shim gets to kill the tree after a kill
	// request before the group is killed over its head.
	shimStopWait = 5 * time.Second
	// drainWait is how long the pipe may stay idle after the final kill (a
	// process outside the group still holding it) before Run stops reading.
	drainWait = 200 * time.Millisecond
	// drainLimit bounds the drain when such a process keeps writing.
	drainLimit = time.Second
)

// limitsNote ends the output of a command that changed the resource
// limits of the pooled shim that ran it.
const limitsNote = "\n[pi-sandbox: this command changed the resource limits of the process that started it (%s): that process was replaced; later commands start with the sandbox's limits]\n"

// maxArgCommand is the longest command passed as an argument; a longer one
// goes through a file (Linux allows 128 KiB per argument).
const maxArgCommand = 96 << 10

type stopReason int

const (
	stopNone stopReason = iota
	stopCanceled
	stopTimeout
	stopSink
)

// Run runs c.Command with the backend's shell. See ops.Runner. The base
// environment is c.BaseEnv when set, else Config.Env, else the host's.
func (b *Backend) Run(ctx context.Context, c *ops.Cmd) error {
	base := b.env
	if c.BaseEnv != nil {
		base = c.BaseEnv
	}
	return b.run(ctx, c, base, b.shim)
}

// run runs c with the base environment base under the shim at shimPath, or
// plainly when it is "".
func (b *Backend) run(ctx context.Context, c *ops.Cmd, base []string, shimPath string) error {
	if ctx.Err() != nil {
		return fmt.Errorf("local: %w", ops.Canceled(ctx))
	}
	dir := c.Dir
	if dir == "" {
		dir = b.info.WorkDir
	}
	shellArgs := []string{b.shell, "-c", c.Command}
	if len(c.Command) > maxArgCommand {
		// Longer than one exec argument may be (E2BIG past 128 KiB): the
		// shell sources it from a file.
		f, err := os.CreateTemp(b.info.SpillDir, "pi-cmd-*.sh")
		if err != nil {
			return &ops.StartError{Err: fmt.Errorf("local: command file: %w", err)}
		}
		_, werr := f.WriteString(c.Command)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		defer os.Remove(f.Name())
		if werr != nil {
			return &ops.StartError{Err: fmt.Errorf("local: command file: %w", werr)}
		}
		shellArgs = []string{b.shell, "-c", `. "$0"`, f.Name()}
	}
	var cmd *exec.Cmd
	bgLog := ""
	var shimArgs []string // after `__shim run`
	if shimPath != "" {
		if b.bg != nil {
			// Processes left running are kept (the shim detaches) unless
			// the sandbox owns its limit of them already.
			if b.bg.full() {
				shimArgs = append(shimArgs, "--refuse-detach")
			} else {
				bgLog = logPath(b.info.SpillDir)
				shimArgs = append(shimArgs, "--detach", bgLog)
			}
			shimArgs = append(shimArgs, "--lifeline", "3")
		}
		if c.Timeout > 0 {
			// A timeout bounds output that keeps coming after the exit,
			// as in pi ("… kept writing output until the timeout").
			shimArgs = append(shimArgs, "--output-limit", "0")
		}
	}
	env := mergeEnv(base, c.Env)
	if shimPath != "" && shimEnvExtra != "" && !hasKey(env, "GORACE") {
		env = append(env, shimEnvExtra)
	}

	var (
		pr     *os.File
		diag   *shimDiag
		waitCh chan error
		start  time.Time
	)
	defer b.refillWarm(shimPath)
	// A pooled shim: it checks the directory itself (a missing one is its
	// "start: chdir" report).
	warm, wout, wdiag := b.startPooled(shimPath, append(append(shimArgs, "--dir", dir, "--"), shellArgs...), env)
	if warm != nil {
		cmd, pr, diag, waitCh, start = warm.cmd, wout, wdiag, warm.waitCh, time.Now()
	}
	if cmd == nil {
		if shimPath != "" {
			cmd = exec.Command(shimPath, append(append(append([]string{"__shim", "run"}, shimArgs...), "--"), shellArgs...)...)
			if b.bg != nil {
				cmd.ExtraFiles = []*os.File{b.bg.lifeline}
			}
		} else {
			cmd = exec.Command(shellArgs[0], shellArgs[1:]...)
		}
		cmd.Dir = dir
		cmd.Env = env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

		var pw *os.File
		var err error
		if pr, pw, diag, err = outputPipes(shimPath != ""); err != nil {
			return fmt.Errorf("local: pipe: %w", err)
		}
		// One pipe for both: the kernel keeps the order of the writes.
		cmd.Stdout, cmd.Stderr = pw, pw
		if diag != nil {
			// The shim merges the command's stderr into its stdout itself and
			// keeps its own stderr for its status lines.
			cmd.Stderr = diag.w
		}
		start = time.Now()
		err = startOwn(cmd)
		pw.Close()
		if diag != nil {
			diag.started()
		}
		if err != nil {
			pr.Close()
			if diag != nil {
				diag.r.Close()
			}
			var pe *os.PathError
			if shimPath != "" && !(errors.As(err, &pe) && pe.Op == "chdir") {
				// The shim binary itself could not run (deleted or replaced
				// since New): run plainly rather than fail the command.
				return b.run(ctx, c, base, "")
			}
			return startError(dir, b.shell, err)
		}
		ch := make(chan error, 1)
		go func() { ch <- waitOwn(cmd) }()
		waitCh = ch
	}
	pgid := cmd.Process.Pid

	out := c.Output
	if out == nil {
		out = io.Discard
	}
	pm := startPump(pr, out)

	var timeoutC <-chan time.Time
	if c.Timeout > 0 {
		t := time.NewTimer(c.Timeout)
		defer t.Stop()
		timeoutC = t.C
	}
	var shellExitC <-chan shellExit
	var detachedC <-chan struct{}
	var doneC <-chan shimDone
	if diag != nil {
		shellExitC = diag.exits
		detachedC = diag.detached
		doneC = diag.ends
	}
	var (
		reason      stopReason
		detached    bool
		exited      bool
		waitErr     error
		runtimeDur  time.Duration
		shellEnd    *shellExit // the shell's end as the shim reported it
		shimEnd     *shimDone  // the shim's last word: its exit follows, off the call's path
		grace       *time.Timer
		graceC      <-chan time.Time
		limit       *time.Timer
		limitC      <-chan time.Time
		readDoneSel = pm.done
	)
	// ended records the command's end (the shim's "done" line or the
	// process's exit, whichever comes first) and reports whether the call
	// is over; else the output's end is waited for, within the grace.
	ended := func() bool {
		exited, runtimeDur = true, time.Since(start)
		waitCh, doneC = nil, nil
		if readDoneSel == nil {
			return true
		}
		grace = time.NewTimer(ops.ExitGrace)
		graceC = grace.C
		if diag == nil && c.Timeout <= 0 {
			// Without the shim (which bounds it itself), output that
			// keeps coming after the exit ends a call without a timeout
			// after ops.ExitOutputLimit; the group kill ends its writers.
			limit = time.NewTimer(ops.ExitOutputLimit)
			limitC = limit.C
		}
		return false
	}
	defer func() {
		if grace != nil {
			grace.Stop()
		}
		if limit != nil {
			limit.Stop()
		}
	}()
loop:
	for {
		select {
		case <-ctx.Done():
			reason = stopCanceled
			break loop
		case <-timeoutC:
			reason = stopTimeout
			break loop
		case e := <-shellExitC:
			e.runtime = e.at.Sub(start)
			shellEnd, shellExitC = &e, nil
		case <-detachedC:
			// The command exited and left processes the shim now owns: the
			// call is over once the output pipe closes (the shim closed it).
			detached, detachedC = true, nil
			if readDoneSel == nil {
				break loop
			}
		case e := <-doneC:
			// The shim has ended the tree and closed its pipes; its exit
			// (the runtime's teardown) is reaped by the goroutine that
			// waits for it, not waited for here.
			shimEnd = &e
			if ended() {
				break loop
			}
		case waitErr = <-waitCh:
			if ended() {
				break loop
			}
		case <-pm.activity:
			if grace != nil {
				grace.Reset(ops.ExitGrace)
			}
		case <-pm.failed:
			reason = stopSink
			break loop
		case <-readDoneSel:
			readDoneSel = nil
			if exited || detached {
				break loop
			}
		case <-graceC:
			if !pm.idle() {
				grace.Reset(ops.ExitGrace)
				continue
			}
			break loop
		case <-limitC:
			break loop
		}
	}

	if detached && reason == stopNone {
		pm.drain(drainWait, drainLimit)
		diag.wait()
		b.bg.adopt(cmd, int(diag.group.Load()), c.Command, bgLog, waitCh)
		if shellEnd == nil {
			return fmt.Errorf("local: %w: the shim detached without the command's status", ops.ErrExitUnknown)
		}
		return codeError(shellEnd.code)
	}
	// A pooled shim's command has a process group of its own.
	groups := []int{pgid}
	if diag != nil {
		if g := int(diag.group.Load()); g > 0 {
			groups = append(groups, g)
		}
	}
	if !exited {
		stop(cmd, groups, waitCh, shimPath != "")
	}
	pm.drain(drainWait, drainLimit)
	if diag != nil {
		diag.wait()
	}
	// A pooled shim that ran a command to its normal end, with nothing
	// left behind, waits for its next run: it goes back to the pool, and
	// the groups are left alone (the shim swept its command's, and is the
	// only member of its own).
	if warm != nil {
		if reason == stopNone && shimEnd != nil && diag.reusable.Load() && pm.err == nil {
			b.warm.put(warm)
		} else {
			if diag.reusable.Load() {
				go warm.discard() // it waits for a run that will not come
			}
			warm = nil
		}
	}
	if warm == nil {
		// The final group kill, always: without the background registry,
		// what the command left running dies with the call. A pooled
		// shim's "started" line may have been read only now (its reader
		// lags under load; the shim stopped or killed before the host saw
		// it): the command's group is taken again from the lines read.
		if diag != nil {
			if g := int(diag.group.Load()); g > 0 && !slices.Contains(groups, g) {
				groups = append(groups, g)
			}
		}
		killGroups(groups...)
	}
	if warm == nil && diag != nil && diag.limits != "" {
		// The pooled shim ended instead of waiting for the next run.
		fmt.Fprintf(out, limitsNote, diag.limits)
	}
	if diag != nil && diag.startErr != nil && exited {
		return &ops.StartError{Err: diag.startErr}
	}

	switch reason {
	case stopCanceled:
		return fmt.Errorf("local: %w", ops.Canceled(ctx))
	case stopTimeout:
		te := &ops.TimeoutError{Limit: c.Timeout}
		switch {
		case shellEnd != nil:
			te.ShellExited, te.ShellExitCode, te.ShellRuntime = true, shellEnd.code, shellEnd.runtime
		case exited && diag == nil:
			te.ShellExited, te.ShellExitCode, te.ShellRuntime = true, exitCode(waitErr), runtimeDur
		}
		return te
	}
	if pm.err != nil {
		return fmt.Errorf("local: output: %w", pm.err)
	}
	if diag != nil && diag.refused.Load() {
		return fmt.Errorf("local: %w: the sandbox owns %d background process groups already; the processes this command left running were killed (list them with `ps`, stop one with `kill PID`)", ops.ErrBackgroundLimit, b.bg.limit())
	}
	if shimEnd != nil {
		return shimEnd.err()
	}
	return exitError(waitErr)
}

// outputPipes makes a command's output pipe (enlarged) and, for a shim,
// the pipe of its status lines.
func outputPipes(shim bool) (pr, pw *os.File, diag *shimDiag, err error) {
	if pr, pw, err = os.Pipe(); err != nil {
		return nil, nil, nil, err
	}
	growPipe(pw)
	if shim {
		if diag, err = newShimDiag(); err != nil {
			pr.Close()
			pw.Close()
			return nil, nil, nil, err
		}
	}
	return pr, pw, diag, nil
}

// stop kills the command's tree and waits for the shell (or the shim). With
// the shim, SIGTERM is a kill request: the shim SIGKILLs every descendant,
// including those that left the group; the group kill follows if the shim
// does not finish in time.
func stop(cmd *exec.Cmd, groups []int, waitCh <-chan error, shim bool) {
	if shim {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-waitCh:
			return
		case <-time.After(shimStopWait):
		}
	}
	// A shim that did not finish may be stopped (its command can stop
	// it) before it reported its command's group: the groups of its
	// children (still its own while it is stopped) die with it.
	if shim {
		groups = append(groups, childGroups(cmd.Process.Pid, groups)...)
	}
	killGroups(groups...)
	<-waitCh
}

// childGroups returns the process groups of parent's children that are
// not among known, read from /proc.
func childGroups(parent int, known []int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		_, f := procStatFields(e.Name())
		if len(f) < 3 {
			continue
		}
		ppid, _ := strconv.Atoi(string(f[1]))
		pgrp, _ := strconv.Atoi(string(f[2]))
		if ppid == parent && pgrp > 0 && !slices.Contains(known, pgrp) && !slices.Contains(out, pgrp) {
			out = append(out, pgrp)
		}
	}
	return out
}

func killGroups(pgids ...int) {
	for _, pgid := range pgids {
		if pgid > 0 {
			_ = syscall.Kill(-pgid, syscall.SIGKILL) // ESRCH: already gone
		}
	}
}

// startError reports a failed start: Op "chdir" for the directory, "exec"
// for the shell (as the shim reports it), as *fs.PathError values with an ops.Errno.
func startError(dir, shell string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) && pe.Op == "chdir" {
		return &ops.StartError{Err: mapErr("chdir", dir, pe.Err)}
	}
	var se syscall.Errno
	if errors.As(err, &se) && se == syscall.EAGAIN {
		// fork/clone: a pids limit or RLIMIT_NPROC.
		return &ops.StartError{Err: fmt.Errorf("%w (%w)", ops.ErrProcessLimit, err)}
	}
	if errors.As(err, &se) {
		return &ops.StartError{Err: mapErr("exec", shell, se)}
	}
	return &ops.StartError{Err: fmt.Errorf("local: start: %w", err)}
}

// codeError is the result for a shell status as the shim reports it: 128+n
// is read as a death by signal n (as a shell reports it).
func codeError(code int) error {
	switch {
	case code == 0:
		return nil
	case code > 128 && code <= 128+64:
		return &ops.ExitError{Code: code, Signal: code - 128}
	}
	return &ops.ExitError{Code: code}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *ops.ExitError
	if errors.As(exitError(err), &ee) {
		return ee.Code
	}
	return -1
}

func exitError(err error) error {
	if err == nil {
		return nil
	}
	var xe *exec.ExitError
	if !errors.As(err, &xe) {
		return fmt.Errorf("local: wait: %w", err)
	}
	ws, ok := xe.Sys().(syscall.WaitStatus)
	switch {
	case !ok:
		return &ops.ExitError{Code: xe.ExitCode()}
	case ws.Signaled():
		return statusError(0, int(ws.Signal()))
	default:
		return &ops.ExitError{Code: ws.ExitStatus()}
	}
}

// statusError is the result for a command that exited with code, or was
// killed by signal sig (when > 0: code 128+sig, as a shell reports it).
func statusError(code, sig int) error {
	switch {
	case sig > 0:
		return &ops.ExitError{Code: 128 + sig, Signal: sig}
	case code != 0:
		return &ops.ExitError{Code: code}
	}
	return nil
}

func hasKey(env []string, key string) bool {
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == key {
			return true
		}
	}
	return false
}

// mergeEnv returns base with extra added; a key in extra replaces the same
// key in base.
func mergeEnv(base, extra []string) []string {
	if len(extra) == 0 {
		return slices.Clip(base) // the caller may append: never into base
	}
	over := make(map[string]bool, len(extra))
	for _, kv := range extra {
		k, _, _ := strings.Cut(kv, "=")
		over[k] = true
	}
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if !over[k] {
			out = append(out, kv)
		}
	}
	return append(out, extra...)
}
