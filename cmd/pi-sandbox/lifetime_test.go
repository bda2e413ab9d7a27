package main

import (
	"strings"
	"testing"
)

// TestLifetimeUsage: a bad or negative duration for a lifetime flag is a
// usage error (exit 2, one line on stderr), before any engine is asked.
func TestLifetimeUsage(t *testing.T) {
	for _, args := range [][]string{
		{"up", "--ttl", "soon"},
		{"up", "--idle-timeout", "-1s"},
		{"up", "--ttl", "5"},
		{"up", "--pool", "p", "--ttl", "5s"},
		{"up", "--backend", "k8s", "--ttl", "5s"},
		{"pool", "fill", "p", "--size", "1", "--ttl", "bogus"},
		{"pool", "fill", "p", "--size", "1", "--max-idle", "-5m"},
		{"pool", "keep", "p", "--size", "1", "--idle-timeout", "1x"},
	} {
		code, out, errs := run(t, args...)
		name := "pi-sandbox " + args[0] + ":"
		if args[0] == "pool" {
			name = "pi-sandbox pool " + args[1] + ":"
		}
		if code != 2 || out != "" || !strings.HasPrefix(errs, name) || strings.Count(errs, "\n") != 2 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
}
