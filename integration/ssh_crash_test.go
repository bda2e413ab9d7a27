package integration

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"path"
	"path/filepath"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops/shim"
	"github.com/pi-sandbox/pi-sandbox/ops/ssh/sshtest"
)

// TestSSHConnectionProcessesKilledMidCommand kills every sshd process of
// the connection (monitors and session processes: a crash) under a running
// command: the call fails with a transport error, the next call reconnects,
// and the orphaned tree does not survive.
func TestSSHConnectionProcessesKilledMidCommand(t *testing.T) {
	s := sshtest.Start(t)
	b := openSSH(t, s, s.Config())
	pids := path.Join(b.Info().WorkDir, "pids")
	err, d := runInFlight(t, b, pids, s.Crash)
	wantTransport(t, err)
	if d > 10*time.Second {
		t.Errorf("Run took %v to notice the crash", d)
	}
	t.Logf("after the crash: %v (%v)", err, d)
	if got := runOut(t, b, "echo again"); got != "again\n" {
		t.Fatalf("after reconnect: %q", got)
	}
	waitGone(t, b, pids)
}

// helperOf prints the pid and argv[0] of the helper serving b's commands:
// the nearest ancestor whose argv is exactly BINARY __shim serve (not a
// shell whose script mentions it).
const helperOf = `p=$$; while [ "$p" -gt 1 ]; do set -- $(tr '\0' ' ' < /proc/$p/cmdline); if [ "$#" -eq 3 ] && [ "$2" = __shim ] && [ "$3" = serve ]; then echo $p $1; exit 0; fi; p=$(cut -d' ' -f4 /proc/$p/stat); done; echo none`

// TestSSHHelperBinaryReplaced replaces the uploaded helper binary by a stale
// one (answering another version) or a truncated copy and kills the helper:
// the backend uploads it again and the calls after the first work.
func TestSSHHelperBinaryReplaced(t *testing.T) {
	s := sshtest.Start(t)
	for _, variant := range []string{"stale", "truncated"} {
		t.Run(variant, func(t *testing.T) {
			b := openSSH(t, s, s.Config())
			if !b.Info().Has("helper") {
				skipOrFail(t, "the ssh backend runs no helper here: "+strings.Join(b.Info().Limits, "; "))
			}
			f := strings.Fields(runOut(t, b, helperOf))
			if len(f) != 2 {
				t.Fatalf("no helper found: %q", f)
			}
			// It runs from the descriptor of the file it verified
			// (shim.PinExe); the file is the upload next to the spill
			// directories.
			pid := f[0]
			if f[1] != shim.PinExe {
				t.Fatalf("the helper runs %s, want the verified descriptor %s", f[1], shim.PinExe)
			}
			m, _ := filepath.Glob(path.Join(path.Dir(path.Dir(b.Info().SpillDir)), "shim-*"))
			if len(m) != 1 {
				t.Fatalf("uploads of the helper binary: %q, want one", m)
			}
			bin := m[0]
			// Never touch a file outside the test user's home.
			if !strings.HasPrefix(bin, s.Home+"/") || !strings.Contains(path.Base(bin), "shim") {
				t.Fatalf("the helper binary %s is not an upload under %s", bin, s.Home)
			}
			repl := "cat > " + bin + ".new <<'EOF'\n#!/bin/sh\nif [ \"$2\" = version ]; then echo 'pi-sandbox-shim 0'; exit 0; fi\necho stale >&2; exit 2\nEOF\n"
			if variant == "truncated" {
				repl = "head -c 65536 " + bin + " > " + bin + ".new\n"
			}
			repl += "chmod 755 " + bin + ".new && chown --reference=" + bin + " " + bin + ".new && mv -f " + bin + ".new " + bin + " && kill -9 " + pid
			if out, err := exec.Command("sh", "-c", repl).CombinedOutput(); err != nil {
				t.Fatalf("replace: %v: %s", err, out)
			}
			var errs []string
			ok := 0
			for range 3 {
				var out bytes.Buffer
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				err := b.Run(ctx, &ops.Cmd{Command: "echo ok", Output: &out})
				cancel()
				if err == nil && out.String() == "ok\n" {
					ok++
				} else {
					errs = append(errs, fmt.Sprintf("%v %q", err, out.String()))
				}
			}
			if ok < 2 {
				t.Fatalf("%d of 3 calls after the replacement worked: %v", ok, errs)
			}
			t.Logf("failed calls: %v", errs)
		})
	}
}
