package helper_test

import (
	"os"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/helper"
	"github.com/pi-sandbox/pi-sandbox/ops/opstest"
	"github.com/pi-sandbox/pi-sandbox/ops/shim"
	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

func TestMain(m *testing.M) {
	shim.Dispatch() // the helper is this test binary run as `__shim serve`
	os.Exit(m.Run())
}

func open(t *testing.T) ops.Backend { return openWith(t, 0) }

// openWith opens a helper over a pipe with at most maxBackground
// background process groups (0: the default).
func openWith(t *testing.T, maxBackground int) ops.Backend {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := os.Environ()
	if shimEnvExtra != "" {
		env = append(env, shimEnvExtra)
	}
	b, err := helper.New(t.Context(), helper.Config{
		Name:  "pipe",
		Dial:  helper.ExecDial(exe, env),
		Hello: proto.Hello{WorkDir: proto.Str(t.TempDir()), SpillDir: proto.Str(t.TempDir()), MaxBackground: maxBackground},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// TestConformance runs the whole suite against the helper over a local
// pipe: the server and the client, with no Docker or ssh.
func TestConformance(t *testing.T) {
	opstest.TestBackend(t, open)
}
