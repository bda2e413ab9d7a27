package shim

import (
	"bytes"
	"os"
	"strconv"
	"sync"
)

// oomFiles are where the oom_kill counter of the helper's memory cgroup is:
// cgroup v2's memory.events, v1's memory.oom_control.
var oomFiles = []string{"/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"}

// oomCounter is the open counter file, read again from its start (pread)
// for each value: two reads per command, without a path walk each.
var oomCounter struct {
	once sync.Once
	f    *os.File // nil: there is none
}

// oomKills reads the oom_kill counter of the helper's memory cgroup; -1
// when there is none.
func oomKills() int64 {
	oomCounter.once.Do(func() {
		for _, name := range oomFiles {
			if f, err := os.Open(name); err == nil {
				oomCounter.f = f
				return
			}
		}
	})
	if oomCounter.f == nil {
		return -1
	}
	var buf [1024]byte
	n, _ := oomCounter.f.ReadAt(buf[:], 0) // io.EOF with the whole file
	return parseOOMKill(buf[:n])
}

// parseOOMKill returns the value of the "oom_kill N" line of p; -1 when it
// has none.
func parseOOMKill(p []byte) int64 {
	for line := range bytes.Lines(p) {
		if v, ok := bytes.CutPrefix(line, []byte("oom_kill ")); ok {
			n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}
