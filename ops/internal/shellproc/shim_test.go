//go:build linux

package shellproc

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops/shim"
)

// TestMain lets this test binary serve as the shim ("__shim run ...").
func TestMain(m *testing.M) {
	shim.Dispatch()
	os.Exit(m.Run())
}

// TestShim runs the wrapper with the shim: output, exit status and a setsid
// escapee killed through KillScript, which a plain group kill misses.
func TestShim(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sh := "/bin/sh"
	t.Run("Exit", func(t *testing.T) {
		r := run(t, sh, Spec{Command: "echo a; echo b >&2; exit 5", Shell: sh, Shim: exe})
		if r.out != "a\nb\n" || r.code != 5 || !r.ctl.HaveExit || r.ctl.Exit != 5 || !r.ctl.Done {
			t.Fatalf("out %q code %d ctl %+v stderr %q", r.out, r.code, r.ctl, r.stderr)
		}
	})
	t.Run("Signal", func(t *testing.T) {
		r := run(t, sh, Spec{Command: "kill -9 $$", Shell: sh, Shim: exe})
		if r.code != 137 {
			t.Fatalf("code %d stderr %q", r.code, r.stderr)
		}
	})
	t.Run("SetsidEscapeeKilled", func(t *testing.T) {
		pidFile := filepath.Join(t.TempDir(), "pid")
		script, err := Script(Spec{
			Command: "setsid sleep 300 & echo $!; echo ready; wait",
			Shell:   sh, PIDFile: pidFile, Shim: exe,
		})
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(sh, "-c", script)
		stdout, _ := cmd.StdoutPipe()
		cmd.Stderr = io.Discard
		cmd.WaitDelay = 5 * time.Second
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		sc.Scan()
		escapee, _ := strconv.Atoi(strings.TrimSpace(sc.Text()))
		sc.Scan()
		if sc.Text() != "ready" || escapee == 0 {
			t.Fatalf("no ready marker (escapee %d, line %q)", escapee, sc.Text())
		}
		// The shim writes its pid file before starting the command.
		if out, err := exec.Command(sh, "-c", KillScript(pidFile, exe)).CombinedOutput(); err != nil {
			t.Fatalf("kill script: %v %s", err, out)
		}
		io.Copy(io.Discard, stdout)
		err = cmd.Wait()
		if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() < 128 {
			t.Errorf("wrapper: %v, want a signal status", err)
		}
		waitDead(t, escapee)
	})
}
