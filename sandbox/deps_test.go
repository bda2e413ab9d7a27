package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestDeps keeps package sandbox free of the backends' SDKs: an embedder who
// brings its own backend (or only the local one) links none of them. The
// name-based opening lives in sandbox/open.
func TestDeps(t *testing.T) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		goBin = "go" // from PATH
	}
	out, err := exec.Command(goBin, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	bad := []string{
		"github.com/moby/",
		"github.com/docker/",
		"golang.org/x/crypto/ssh",
		"github.com/pkg/sftp",
		"k8s.io/",
		"github.com/pi-sandbox/pi-sandbox/ops/docker",
		"github.com/pi-sandbox/pi-sandbox/ops/ssh",
		"github.com/pi-sandbox/pi-sandbox/ops/local",
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list printed too little: %q", out)
	}
	for _, d := range deps {
		for _, p := range bad {
			if strings.HasPrefix(d, p) && (strings.HasSuffix(p, "/") || d == p || strings.HasPrefix(d, p+"/")) {
				t.Errorf("package sandbox depends on %s (backends are opened by sandbox/open)", d)
			}
		}
	}
}
