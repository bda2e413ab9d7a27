package native

import "time"

// SetTrimAfter sets how long the shim pool waits before it trims its idle
// shims, and returns a function that restores it.
func SetTrimAfter(d time.Duration) func() {
	old := trimAfter
	trimAfter = d
	return func() { trimAfter = old }
}
