package testenv

import (
	"os"
	"strconv"
	"strings"
)

// Alive reports whether pid names a live process on this machine: a
// zombie (or a dead one not yet gone) counts as dead.
func Alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}
