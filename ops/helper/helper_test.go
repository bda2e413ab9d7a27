package helper_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/helper"
	"github.com/pi-sandbox/pi-sandbox/ops/opstest"
	"github.com/pi-sandbox/pi-sandbox/ops/shim"
	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

func TestMain(m *testing.M) {
	shim.Dispatch() // the helper is this test binary run as `__shim serve`
	if dir := os.Getenv("PI_SANDBOX_TEST_IMPOSTOR"); dir != "" {
		impostor(dir)
	}
	if name := os.Getenv("PI_SANDBOX_TEST_PEEK"); name != "" {
		peek(name)
	}
	os.Exit(m.Run())
}

// impostor listens on the helper socket in dir as a process of the user
// could, answering like a daemon without the key, and says so with a byte
// on stdout; it runs until killed.
func impostor(dir string) {
	ln, err := net.Listen("unix", filepath.Join(dir, "helper.sock"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Stdout.Write([]byte{'.'})
	for {
		c, err := ln.Accept()
		if err != nil {
			os.Exit(1)
		}
		go func() {
			var b [1]byte
			for b[0] != '\n' {
				if _, err := c.Read(b[:]); err != nil {
					return
				}
			}
			fmt.Fprintf(c, "pi-sandbox-helper x %d -\n", os.Getpid())
		}()
	}
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
