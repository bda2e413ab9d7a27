package mcpserve_test

import (
	"os"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
	"github.com/pi-sandbox/pi-sandbox/ops/shim"
)

// TestMain keeps the tests' temporary files out of $TMPDIR and fails the
// run when a test leaves one behind.
func TestMain(m *testing.M) {
	shim.Dispatch() // local backends run this test binary as their helper
	os.Exit(testenv.RunInTempDir(m))
}
