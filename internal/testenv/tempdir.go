package testenv

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// RunInTempDir runs m with TMPDIR (os.TempDir, t.TempDir, and every
// backend or subprocess that makes a temporary directory) pointing at a fresh
// directory, and removes that directory afterwards, so a test binary leaves
// nothing in the caller's $TMPDIR. Anything a test left in it — an unclosed
// backend's pi-sandbox-spill-…, a file made with os.CreateTemp and not
// removed — is listed and fails the run, except pi-sandbox-UID, the per-user
// spill base that sandbox/open keeps on purpose. Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(testenv.RunInTempDir(m)) }
func RunInTempDir(m *testing.M) int {
	dir, err := os.MkdirTemp("", "pi-sandbox-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	// Searchable like /tmp, so that other users can reach their own
	// directories in it (the ssh tests' login user has its home here).
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	old, had := os.LookupEnv("TMPDIR")
	os.Setenv("TMPDIR", dir)
	code := m.Run()
	if had {
		os.Setenv("TMPDIR", old)
	} else {
		os.Unsetenv("TMPDIR")
	}
	if left := leftovers(dir); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "testenv: the tests left %s in TMPDIR (removed now)\n", strings.Join(left, ", "))
		if code == 0 {
			code = 1
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintln(os.Stderr, "testenv: remove the test TMPDIR:", err)
	}
	return code
}

// leftovers lists what dir holds, except the per-user spill base.
func leftovers(dir string) []string {
	es, err := os.ReadDir(dir)
	if err != nil {
		return []string{"(" + err.Error() + ")"}
	}
	var out []string
	for _, e := range es {
		if e.Name() == fmt.Sprintf("pi-sandbox-%d", os.Getuid()) {
			continue
		}
		out = append(out, e.Name())
	}
	return out
}
