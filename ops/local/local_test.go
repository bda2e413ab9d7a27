package local_test

import (
	"os"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/local"
	"github.com/pi-sandbox/pi-sandbox/ops/opstest"
	"github.com/pi-sandbox/pi-sandbox/ops/shim"
)

func TestMain(m *testing.M) {
	shim.Dispatch() // the backend runs this test binary as its helper and shim
	os.Exit(testenv.RunInTempDir(m))
}

// TestConformance: the default path, the helper over a pipe.
func TestConformance(t *testing.T) {
	opstest.TestBackend(t, newBackend(local.Config{}, "helper"))
}

// TestConformanceNoHelper: the fallback, operations in this process.
func TestConformanceNoHelper(t *testing.T) {
	opstest.TestBackend(t, newBackend(local.Config{NoHelper: true}, "shim"))
}

func newBackend(cfg local.Config, want string) func(t *testing.T) ops.Backend {
	return func(t *testing.T) ops.Backend {
		c := cfg
		c.WorkDir = t.TempDir()
		b, err := local.New(t.Context(), c)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		if !b.Info().Has(want) {
			t.Fatalf("capabilities %v lack %q (limits %v)", b.Info().Capabilities, want, b.Info().Limits)
		}
		return b
	}
}
