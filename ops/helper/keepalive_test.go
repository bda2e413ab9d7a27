package helper_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/helper"
	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

// leaseStream is a `__shim serve --lease` child's stdio; its stdin stays
// open until Close.
type leaseStream struct {
	io.Reader
	io.WriteCloser
}

func (s leaseStream) Close() error { return s.WriteCloser.Close() }

// TestKeepaliveHoldsLease: with Keepalive, a helper started with a lease
// much shorter than a silent command stays up (the client's pings count);
// without the pings it exits on its own. The lease is 20 ping periods, so
// a loaded machine that delays a few pings does not end it.
func TestKeepaliveHoldsLease(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dial := func(ctx context.Context) (io.ReadWriteCloser, error) {
		cmd := exec.Command(exe, "__shim", "serve", "--lease", "2s")
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		in, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		go cmd.Wait()
		return leaseStream{out, in}, nil
	}
	for _, keepalive := range []time.Duration{100 * time.Millisecond, 0} {
		lost := make(chan error, 1)
		b, err := helper.New(t.Context(), helper.Config{
			Name:      "lease",
			Dial:      dial,
			Keepalive: keepalive,
			OnLost:    func(err error) { lost <- err },
			Hello:     proto.Hello{WorkDir: proto.Str(t.TempDir()), SpillDir: proto.Str(t.TempDir())},
		})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		err = b.Run(t.Context(), &ops.Cmd{Command: "sleep 3; echo done", Output: &out})
		switch {
		case keepalive > 0 && (err != nil || out.String() != "done\n"):
			t.Errorf("with keepalive: Run = %v, output %q; want done", err, out.String())
		case keepalive == 0 && err == nil:
			t.Errorf("without keepalive: Run succeeded past the helper's 2s lease")
		}
		b.Close()
	}
}
