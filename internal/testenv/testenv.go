// Package testenv holds the one rule for tests that need something of the
// machine (a Docker engine, sshd, rg, Debian's apt sources): skip with the
// reason on a developer's machine, fail under CI=true, where a skip would
// hide a missing install step.
package testenv

import (
	"os"
	"testing"
)

// CI reports whether the tests run in CI (CI=true).
func CI() bool { return os.Getenv("CI") == "true" }

// SkipOrFail skips t with reason, or fails it when CI() is true.
func SkipOrFail(t testing.TB, reason string) {
	t.Helper()
	if CI() {
		t.Fatal(reason + "; CI=true requires it")
	}
	t.Skip(reason)
}
