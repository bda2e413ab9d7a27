package main

import (
	"os"
	"strconv"
	"strings"
)

// underTime wraps argv in GNU time (/usr/bin/time) where it is installed,
// for a command's own peak RSS: a child's ru_maxrss also counts this
// process, which it was forked from. peakKiB reads the figure after the
// command ran (-1 without one); done removes time's output file.
func underTime(argv []string) (wrapped []string, peakKiB func() int64, done func()) {
	none := func() int64 { return -1 }
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		return argv, none, func() {}
	}
	f, err := os.CreateTemp("", "pibench-rss-")
	if err != nil {
		return argv, none, func() {}
	}
	f.Close()
	wrapped = append([]string{"/usr/bin/time", "-f", "%M", "-o", f.Name()}, argv...)
	peakKiB = func() int64 {
		b, err := os.ReadFile(f.Name())
		if err != nil {
			return -1
		}
		// The last line: GNU time writes "Command exited with non-zero
		// status N" first when it did.
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		kib, err := strconv.ParseInt(strings.TrimSpace(lines[len(lines)-1]), 10, 64)
		if err != nil {
			return -1
		}
		return kib
	}
	return wrapped, peakKiB, func() { os.Remove(f.Name()) }
}
