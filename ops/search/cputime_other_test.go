//go:build !unix

package search

import "time"

// cpuTime is not measured here.
func cpuTime() time.Duration { return 0 }
