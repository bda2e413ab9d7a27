package native

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A shim sweeps what its command leaves, as the child subreaper of its
// tree; a shim killed by SIGKILL (a command can kill its own parent)
// sweeps nothing, and its children are re-parented to the nearest
// subreaper above it. The helper's group kill that follows misses what
// left the command's process group (setsid), which would then run
// untracked — not listed, not counted as background, alive until the
// target ends. A long-lived helper (the daemon) is that subreaper
// (AdoptOrphans): when one of its shims dies by a signal, every child it
// did not start itself is such an orphan, and is killed with its
// descendants and reaped. What a live background shim owns stays its own
// (it is that shim's child, not this process's).

// orphanSweepLimit bounds one sweep (only a process stuck in the kernel
// survives a SIGKILL that long).
const orphanSweepLimit = 2 * time.Second

// own is the set of this process's children it started itself.
var own struct {
	// start is held for reading across a start (the child exists before
	// its pid is known) and for writing by a sweep's scan.
	start sync.RWMutex
	mu    sync.Mutex
	pids  map[int]bool
}

var (
	adopting atomic.Bool
	sweepReq = make(chan struct{}, 1)
)

// AdoptOrphans makes this process a child subreaper: what the commands of
// a shim killed by a signal leave is re-parented to it, and it kills and
// reaps them.
func AdoptOrphans() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("native: subreaper: %w", err)
	}
	if !adopting.Swap(true) {
		go func() {
			for range sweepReq {
				sweepOrphans()
			}
		}()
	}
	return nil
}

// startOwn starts cmd as one of this process's own children.
func startOwn(cmd *exec.Cmd) error {
	own.start.RLock()
	defer own.start.RUnlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	own.mu.Lock()
	if own.pids == nil {
		own.pids = map[int]bool{}
	}
	own.pids[cmd.Process.Pid] = true
	own.mu.Unlock()
	return nil
}

// waitOwn waits for a child started by startOwn; one that died by a
// signal could not sweep its tree: a sweep of orphans follows.
func waitOwn(cmd *exec.Cmd) error {
	err := cmd.Wait()
	own.mu.Lock()
	delete(own.pids, cmd.Process.Pid)
	own.mu.Unlock()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && adopting.Load() {
		select {
		case sweepReq <- struct{}{}:
		default: // one is pending: it sees this one's orphans too
		}
	}
	return err
}

// sweepOrphans kills and reaps every child of this process it did not
// start, with their descendants, until none is left or orphanSweepLimit
// has passed.
func sweepOrphans() {
	deadline := time.Now().Add(orphanSweepLimit)
	self := os.Getpid()
	for {
		own.start.Lock()
		procs := readParents()
		var orphans []int
		own.mu.Lock()
		for pid, ppid := range procs {
			if ppid == self && !own.pids[pid] {
				orphans = append(orphans, pid)
			}
		}
		own.mu.Unlock()
		if len(orphans) == 0 {
			own.start.Unlock()
			return
		}
		children := map[int][]int{}
		for pid, ppid := range procs {
			children[ppid] = append(children[ppid], pid)
		}
		for _, pid := range orphans {
			killTree(pid, children, 0)
		}
		own.start.Unlock()
		// Reaped here (they are this process's children now); their own
		// children, killed too, are re-parented here and seen next round.
		for _, pid := range orphans {
			for {
				var ws syscall.WaitStatus
				p, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
				if p == pid || (err != nil && err != syscall.EINTR) || time.Now().After(deadline) {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		if time.Now().After(deadline) {
			return
		}
	}
}

// killTree SIGKILLs pid and its descendants (children: pid → its children).
func killTree(pid int, children map[int][]int, depth int) {
	syscall.Kill(pid, syscall.SIGKILL)
	if depth > 64 {
		return
	}
	for _, c := range children[pid] {
		killTree(c, children, depth+1)
	}
}

// readParents maps every process (zombies included) to its parent.
func readParents() map[int]int {
	ents, _ := os.ReadDir("/proc")
	out := make(map[int]int, len(ents))
	for _, e := range ents {
		pid, f := procStatFields(e.Name())
		if f == nil {
			continue
		}
		if ppid, err := strconv.Atoi(string(f[1])); err == nil {
			out[pid] = ppid
		}
	}
	return out
}
