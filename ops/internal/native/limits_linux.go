package native

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// A command can lower the resource limits of any process of its user
// (prlimit(2) needs no privilege for that): of the shim that runs it, of
// an idle pooled shim, of the helper itself. Every later command started
// by such a process would inherit them, and a lowered hard limit cannot be
// raised again: a process whose limits are no longer those it started with
// is replaced, not reused.

// numLimits is RLIMIT_NLIMITS: the resources Linux has.
const numLimits = 16

// limitNames names the resources by their index.
var limitNames = [numLimits]string{
	"RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_DATA", "RLIMIT_STACK", "RLIMIT_CORE",
	"RLIMIT_RSS", "RLIMIT_NPROC", "RLIMIT_NOFILE", "RLIMIT_MEMLOCK", "RLIMIT_AS",
	"RLIMIT_LOCKS", "RLIMIT_SIGPENDING", "RLIMIT_MSGQUEUE", "RLIMIT_NICE",
	"RLIMIT_RTPRIO", "RLIMIT_RTTIME",
}

// Limits are a process's resource limits; ok[r] is false for a resource
// that could not be read (it is not compared).
type Limits struct {
	lim [numLimits]unix.Rlimit
	ok  [numLimits]bool
}

// OwnLimits reads this process's limits (16 getrlimit calls: microseconds).
func OwnLimits() Limits { return ProcessLimits(0) }

// ProcessLimits reads the limits of process pid (0: this one).
func ProcessLimits(pid int) Limits {
	var l Limits
	for r := range numLimits {
		l.ok[r] = unix.Prlimit(pid, r, nil, &l.lim[r]) == nil
	}
	return l
}

// Changed names the limits of now that differ from l's ("" when none):
// "RLIMIT_FSIZE 1000/1000 (was unlimited/unlimited)".
func (l Limits) Changed(now Limits) string {
	return l.changed(now, false)
}

// changed is Changed; with softFiles, RLIMIT_NOFILE's soft limit is not
// compared (a Go program raises its own to the hard limit when it starts
// and gives its children the one it was started with).
func (l Limits) changed(now Limits, softFiles bool) string {
	var diffs []string
	for r := range numLimits {
		if !l.ok[r] || !now.ok[r] {
			continue
		}
		a, b := l.lim[r], now.lim[r]
		if softFiles && r == unix.RLIMIT_NOFILE {
			a.Cur, b.Cur = 0, 0
		}
		if a != b {
			diffs = append(diffs, fmt.Sprintf("%s %s (was %s)", limitNames[r], fmtLimit(now.lim[r]), fmtLimit(l.lim[r])))
		}
	}
	return strings.Join(diffs, ", ")
}

func fmtLimit(l unix.Rlimit) string {
	f := func(v uint64) string {
		if v == unix.RLIM_INFINITY {
			return "unlimited"
		}
		return fmt.Sprint(v)
	}
	return f(l.Cur) + "/" + f(l.Max)
}
