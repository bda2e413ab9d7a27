package shim

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// procEntry is what /proc/PID/stat says about one process.
type procEntry struct {
	ppid  int
	state byte
}

func readStat(pid int) (procEntry, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procEntry{}, false
	}
	// "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return procEntry{}, false
	}
	f := bytes.Fields(b[i+2:])
	if len(f) < 2 || len(f[0]) == 0 {
		return procEntry{}, false
	}
	ppid, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return procEntry{}, false
	}
	return procEntry{ppid: ppid, state: f[0][0]}, true
}

// descendants lists the live (not zombie) processes whose parent chain leads
// to root.
func descendants(root int) []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	procs := make(map[int]procEntry, len(names))
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid == root {
			continue
		}
		if e, ok := readStat(pid); ok {
			procs[pid] = e
		}
	}
	var out []int
	for pid, e := range procs {
		if e.state == 'Z' || e.state == 'X' {
			continue
		}
		p := e.ppid
		for range 4096 { // bounded: a chain cannot be longer than the table
			if p == root {
				out = append(out, pid)
				break
			}
			pe, ok := procs[p]
			if !ok {
				break
			}
			p = pe.ppid
		}
	}
	return out
}

// killDescendants SIGKILLs every descendant of root until none is left alive,
// or until limit passes (a process stuck in uninterruptible sleep). It
// reports whether none is left.
func killDescendants(root int, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	pause := 200 * time.Microsecond
	for {
		ds := descendants(root)
		if len(ds) == 0 {
			return true
		}
		// Stop all before killing any: killed one by one, a shell whose
		// foreground child died first would run its next command
		// (`sleep 9; rm x`) before its own SIGKILL arrives. A stopped
		// process cannot run or fork; SIGKILL still ends it.
		for _, pid := range ds {
			_ = syscall.Kill(pid, syscall.SIGSTOP)
		}
		for _, pid := range ds {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
		pause = min(2*pause, 10*time.Millisecond)
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	e, ok := readStat(pid)
	return ok && e.state != 'Z' && e.state != 'X'
}
