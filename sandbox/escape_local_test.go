package sandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops/local"
	"github.com/pi-sandbox/pi-sandbox/sandbox/sandboxtest"
)

func TestEscapesLocal(t *testing.T) {
	sandboxtest.Run(t, func(t *testing.T) sandboxtest.Target {
		base := t.TempDir()
		w, o := filepath.Join(base, "work"), filepath.Join(base, "outside")
		for _, d := range []string{w, o} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		b, err := local.New(context.Background(), local.Config{WorkDir: w})
		if err != nil {
			t.Fatal(err)
		}
		return sandboxtest.Target{Backend: b, Outside: o}
	})
}
