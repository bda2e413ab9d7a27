package sandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops/local"
	"github.com/pi-sandbox/pi-sandbox/sandbox/sandboxtest"
)

// The attempts run with the helper (confinement in the helper, at open
// time) and without it (the sandbox's check before each operation).
func TestEscapesLocal(t *testing.T) {
	for _, noHelper := range []bool{false, true} {
		t.Run(map[bool]string{false: "helper", true: "nohelper"}[noHelper], func(t *testing.T) { escapesLocal(t, noHelper) })
	}
}

func escapesLocal(t *testing.T, noHelper bool) {
	sandboxtest.Run(t, func(t *testing.T) sandboxtest.Target {
		base := t.TempDir()
		w, o := filepath.Join(base, "work"), filepath.Join(base, "outside")
		for _, d := range []string{w, o} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		b, err := local.New(context.Background(), local.Config{WorkDir: w, NoHelper: noHelper})
		if err != nil {
			t.Fatal(err)
		}
		return sandboxtest.Target{Backend: b, Outside: o}
	})
}
