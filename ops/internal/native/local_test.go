package native_test

import (
	"os"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/native"
	"github.com/pi-sandbox/pi-sandbox/ops/opstest"
	"github.com/pi-sandbox/pi-sandbox/ops/shim"
)

func TestMain(m *testing.M) {
	shim.Dispatch() // the backend re-executes this test binary as its shim
	// An exec.Cmd that is never waited for panics with its creation stack.
	// Set here, not in an init, so the shim (this binary too) does not put
	// it into the environment of the commands it runs.
	os.Setenv("GODEBUG", "execwait=2")
	os.Exit(m.Run())
}

func TestConformance(t *testing.T) {
	opstest.TestBackend(t, newBackend(native.Config{}))
}

func newBackend(cfg native.Config) func(t *testing.T) ops.Backend {
	return func(t *testing.T) ops.Backend {
		c := cfg
		c.WorkDir = t.TempDir()
		b, err := native.New(t.Context(), withShim(c))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
}

// withShim gives c this test binary as its shim (TestMain dispatches it),
// unless c disables the shim or names one.
func withShim(c native.Config) native.Config {
	if !c.NoShim && c.ShimPath == "" {
		exe, err := os.Executable()
		if err != nil {
			panic(err)
		}
		c.ShimPath = exe
	}
	return c
}
