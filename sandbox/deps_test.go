package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
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

// TestDockerDeps keeps the Kubernetes client out of programs that use only
// Docker: the testcontainers module (sandbox/tcsandbox) and a program that
// opens its sandbox with ops/docker and OpenBackend link no k8s.io package.
// (Package sandbox/open opens every built-in backend by name, so it links
// them all.)
func TestDockerDeps(t *testing.T) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		goBin = "go" // from PATH
	}
	for _, pkgs := range [][]string{
		{"./tcsandbox"},
		{".", "../ops/docker"},
	} {
		out, err := exec.Command(goBin, append([]string{"list", "-deps"}, pkgs...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %v: %v\n%s", pkgs, err, out)
		}
		deps := strings.Fields(string(out))
		if !slices.Contains(deps, "github.com/pi-sandbox/pi-sandbox/ops/docker") {
			t.Fatalf("go list %v does not list ops/docker: %q", pkgs, out)
		}
		for _, d := range deps {
			if strings.HasPrefix(d, "k8s.io/") || d == "github.com/pi-sandbox/pi-sandbox/ops/k8s" {
				t.Errorf("%v depends on %s (the k8s backend is linked only through sandbox/open or ops/k8s)", pkgs, d)
			}
		}
	}
}
