package target

import (
	"os"
	"strconv"
)

// ProcessAlive reports whether pid names a process on this machine (the
// CLI that owns an ephemeral sandbox, for gc).
func ProcessAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}
