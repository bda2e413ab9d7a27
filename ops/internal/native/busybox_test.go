package native_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops/internal/native"
	"github.com/pi-sandbox/pi-sandbox/ops/opstest"
)

// TestConformanceBusybox runs the suite with busybox's sh and applets only
// on PATH, as in a minimal container: it proves the suite's shell commands
// (and the backend) work without bash and coreutils. Needs busybox
// (Debian: busybox or busybox-static).
func TestConformanceBusybox(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	bb, err := exec.LookPath("busybox")
	if err != nil {
		t.Skip("busybox not installed (apt-get install busybox-static)")
	}
	list, err := exec.Command(bb, "--list").Output()
	if err != nil {
		t.Fatalf("busybox --list: %v", err)
	}
	bin := t.TempDir()
	for _, applet := range strings.Fields(string(list)) {
		if err := os.Symlink(bb, filepath.Join(bin, applet)); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"PATH=" + bin}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	opstest.TestBackend(t, newBackend(native.Config{Shell: filepath.Join(bin, "sh"), Env: env}))
}
