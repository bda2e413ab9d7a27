package native_test

import (
	"errors"
	"fmt"
	"os/signal"
	"syscall"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/native"
)

// TestSignalDeaths checks that a signal death is reported as such, also
// through the shim (which re-raises the signal on itself).
func TestSignalDeaths(t *testing.T) {
	for _, cfg := range []native.Config{{}, {NoShim: true}} {
		b := open(t, cfg)
		for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGABRT, syscall.SIGSEGV, syscall.SIGPIPE, syscall.SIGUSR1, syscall.SIGALRM} {
			// A signal this process was started ignoring (SIGHUP under
			// nohup) stays ignored in every child: no death to report.
			if signal.Ignored(sig) {
				t.Logf("signal %d is ignored by this test process: not checked", int(sig))
				continue
			}
			err := b.Run(t.Context(), &ops.Cmd{Command: fmt.Sprintf("kill -%d $$", int(sig))})
			var ee *ops.ExitError
			if !errors.As(err, &ee) || ee.Signal != int(sig) || ee.Code != 128+int(sig) {
				t.Errorf("shim %v: kill -%d $$: %v", b.Info().Has("shim"), int(sig), err)
			}
		}
	}
}
