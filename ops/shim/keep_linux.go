package shim

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// keepMain is `__shim keep`: a sandbox's lifetime, run as the container's
// PID 1 (the engine's init is not used then; it reaps orphans itself).
// When a limit passes it exits, and the kernel kills every other process
// of the PID namespace with it: the container ends, and the engine removes
// it (AutoRemove) with its volumes. Nothing in the container can stop or
// kill it: the kernel delivers to a namespace's init only the signals it
// handles, never SIGSTOP or SIGKILL from inside.
//
//   - --ttl D: the sandbox ends D after its start.
//   - --idle D: it ends once the activity file (--activity, touched by the
//     helper daemon at every call and every second while a call runs) has
//     not changed for D.
//   - --wait-claim: a pool's idle member. The clocks start at the first
//     SIGUSR1 (the claim sends it through the engine); --max-idle D ends a
//     member no claim took within D.
//
// --state FILE receives LifetimeState as JSON once the clocks start (for
// `pi-sandbox ls`).
func keepMain(args []string, stderr io.Writer) int {
	fl := flag.NewFlagSet("__shim keep", flag.ContinueOnError)
	fl.SetOutput(stderr)
	ttl := fl.Duration("ttl", 0, "end the sandbox `DURATION` after its start (zero: never)")
	idle := fl.Duration("idle", 0, "end the sandbox after `DURATION` without a client call (zero: never)")
	activity := fl.String("activity", "", "the `FILE` whose modification time is the last client call")
	state := fl.String("state", "", "write the lifetime's start and limits to `FILE` (JSON)")
	waitClaim := fl.Bool("wait-claim", false, "a pool's idle member: the clocks start at the first SIGUSR1")
	maxIdle := fl.Duration("max-idle", 0, "with --wait-claim: end a member not claimed within `DURATION` (zero: never)")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if fl.NArg() != 0 || *ttl < 0 || *idle < 0 || *maxIdle < 0 || (*idle > 0 && *activity == "") {
		fmt.Fprintln(stderr, "pi-sandbox-shim: usage: __shim keep [--ttl D] [--idle D --activity FILE] [--state FILE] [--wait-claim [--max-idle D]]")
		return 2
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		fmt.Fprintf(stderr, "pi-sandbox-shim: warning: dumpable: %v\n", err)
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGCHLD)
	k := &keeper{ttl: *ttl, idle: *idle, activity: *activity, state: *state, stderr: stderr}
	if !*waitClaim {
		k.start(time.Now())
	} else {
		if *maxIdle > 0 {
			k.claimBy = time.Now().Add(*maxIdle)
		}
		fmt.Fprintln(stderr, "pi-sandbox-shim: keep: a pool's idle member: waiting for the claim")
	}
	timer := time.NewTimer(time.Hour)
	for {
		now := time.Now()
		why, next := k.check(now)
		if why != "" {
			fmt.Fprintf(stderr, "pi-sandbox-shim: keep: %s: ending the sandbox\n", why)
			return 0
		}
		timer.Reset(next.Sub(now))
		select {
		case s := <-sigs:
			switch s {
			case syscall.SIGCHLD:
				reapAll()
			case syscall.SIGUSR1:
				if k.started.IsZero() {
					k.start(time.Now())
				}
			default:
				return 0 // a stop
			}
		case <-timer.C:
		}
	}
}

// keeper is the state of keepMain.
type keeper struct {
	ttl, idle       time.Duration
	activity, state string
	stderr          io.Writer
	claimBy         time.Time // zero: none
	started         time.Time // zero: waiting for the claim
}

// start starts the clocks and records them in the state file.
func (k *keeper) start(now time.Time) {
	k.started = now
	if k.state == "" {
		return
	}
	b, _ := json.Marshal(LifetimeState{StartMS: now.UnixMilli(), TTLMS: k.ttl.Milliseconds(), IdleMS: k.idle.Milliseconds()})
	tmp := k.state + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err == nil {
		err = os.Rename(tmp, k.state)
		if err != nil {
			fmt.Fprintf(k.stderr, "pi-sandbox-shim: keep: state: %v\n", err)
		}
	} else {
		fmt.Fprintf(k.stderr, "pi-sandbox-shim: keep: state: %v\n", err)
	}
}

// check returns why the sandbox ends now ("" while it lives) and when to
// look again.
func (k *keeper) check(now time.Time) (string, time.Time) {
	next := now.Add(time.Hour)
	if k.started.IsZero() {
		if !k.claimBy.IsZero() {
			if !now.Before(k.claimBy) {
				return "no claim within the pool's maximum idle age", next
			}
			next = k.claimBy
		}
		return "", next
	}
	if k.ttl > 0 {
		end := k.started.Add(k.ttl)
		if !now.Before(end) {
			return fmt.Sprintf("its time to live (%s) passed", k.ttl), next
		}
		next = earlier(next, end)
	}
	if k.idle > 0 {
		last := k.started
		if fi, err := os.Stat(k.activity); err == nil && fi.ModTime().After(last) {
			last = earlier(fi.ModTime(), now) // a time in the future is now
		}
		end := last.Add(k.idle)
		if !now.Before(end) {
			return fmt.Sprintf("no client call for %s (idle timeout %s)", now.Sub(last).Round(time.Millisecond), k.idle), next
		}
		next = earlier(next, end)
	}
	return "", next
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// reapAll reaps every child that has exited: as PID 1 the keeper inherits
// the orphans of the whole container.
func reapAll() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if pid <= 0 || errors.Is(err, unix.ECHILD) {
			return
		}
	}
}

// endContainer ends the container this helper serves, when its init is the
// keep-alive script (KeepAliveMarker): that script exits on SIGTERM (the
// engine's init forwards it), and when the container's init exits the
// kernel kills every process in it. `__shim serve --end-container` calls it
// once its client is gone: an ephemeral container lives as long as its one
// session.
func endContainer(stderr io.Writer) {
	b, err := os.ReadFile("/proc/1/cmdline")
	if err != nil || !strings.Contains(string(b), KeepAliveMarker) {
		fmt.Fprintln(stderr, "pi-sandbox-shim: serve: --end-container: PID 1 is not the sandbox's keep-alive script: nothing ended")
		return
	}
	if err := unix.Kill(1, unix.SIGTERM); err != nil {
		fmt.Fprintf(stderr, "pi-sandbox-shim: serve: end the container: %v\n", err)
	}
}
