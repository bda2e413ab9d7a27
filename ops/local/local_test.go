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

func init() {
	// An exec.Cmd that is never waited for panics with its creation stack.
	os.Setenv("GODEBUG", "execwait=2")
}

func TestMain(m *testing.M) {
	shim.Dispatch() // the backend re-executes this test binary as its shim
	os.Exit(testenv.RunInTempDir(m))
}

func TestConformance(t *testing.T) {
	opstest.TestBackend(t, newBackend(local.Config{}))
}

func newBackend(cfg local.Config) func(t *testing.T) ops.Backend {
	return func(t *testing.T) ops.Backend {
		c := cfg
		c.WorkDir = t.TempDir()
		b, err := local.New(t.Context(), c)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
}
