package tools

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops/local"
)

// The golden tests also run on the local backend, in a temporary
// directory.
func init() { testBackends = append(testBackends, backendCase{"local", newLocalEnv}) }

func newLocalEnv(t *testing.T) *testEnv {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := local.New(context.Background(), local.Config{WorkDir: dir, NoHelper: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	must := func(err error) {
		if err != nil {
			t.Helper()
			t.Fatal(err)
		}
	}
	abs := func(rel string) string { return filepath.Join(dir, rel) }
	return &testEnv{
		b:  b,
		wd: dir,
		put: func(rel string, data []byte) {
			must(os.MkdirAll(filepath.Dir(abs(rel)), 0o755))
			must(os.WriteFile(abs(rel), data, 0o644))
		},
		mkdir: func(rel string) { must(os.MkdirAll(abs(rel), 0o755)) },
		symlink: func(target, rel string) {
			must(os.MkdirAll(filepath.Dir(abs(rel)), 0o755))
			must(os.Symlink(target, abs(rel)))
		},
		chmod: func(rel string, perm fs.FileMode) { must(os.Chmod(abs(rel), perm)) },
	}
}
