package sandbox

import (
	"os"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
)

// TestMain keeps the tests' temporary files out of $TMPDIR and fails the
// run when a test leaves one behind.
func TestMain(m *testing.M) { os.Exit(testenv.RunInTempDir(m)) }
