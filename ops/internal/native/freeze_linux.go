package native

import (
	"os"
	"strconv"
	"syscall"
)

// Freeze stops (SIGSTOP) every process descended from this one — the
// commands it started and what they left running, background groups
// included — for a consistent checkpoint, and returns how many it stopped
// and the function that resumes exactly those (SIGCONT). A process that
// was stopped already is left stopped. Children forked while the tree is
// being stopped are caught by scanning again, until a scan finds none
// (at most 8 scans).
func Freeze() (n int, thaw func()) {
	self := os.Getpid()
	stopped := map[int]bool{}
	skip := map[int]bool{}
	for range 8 {
		found := false
		for _, pid := range descendants(self) {
			if stopped[pid] || skip[pid] {
				continue
			}
			if st, ok := procState(pid); !ok || st == 'T' || st == 't' || st == 'Z' {
				skip[pid] = true // stopped by someone else, traced, or gone
				continue
			}
			if syscall.Kill(pid, syscall.SIGSTOP) == nil {
				stopped[pid] = true
				found = true
			}
		}
		if !found {
			break
		}
	}
	return len(stopped), func() {
		for pid := range stopped {
			syscall.Kill(pid, syscall.SIGCONT)
		}
	}
}

// descendants lists the processes below pid in the process tree, read
// from /proc.
func descendants(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range ents {
		p, f := procStatFields(e.Name())
		if f == nil {
			continue
		}
		ppid, _ := strconv.Atoi(string(f[1]))
		children[ppid] = append(children[ppid], p)
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// procState is the state letter of /proc/PID/stat.
func procState(pid int) (byte, bool) {
	_, f := procStatFields(strconv.Itoa(pid))
	if f == nil {
		return 0, false
	}
	return f[0][0], true
}
