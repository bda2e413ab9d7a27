package local_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops/local"
	"github.com/pi-sandbox/pi-sandbox/ops/shim"
)

// TestNewRefusesMissingHelperBinary: without a shim binary New fails with
// the error that names it; NoHelper runs without it, and Info says what
// is lost.
func TestNewRefusesMissingHelperBinary(t *testing.T) {
	t.Setenv("PI_SANDBOX_SHIM_BIN", filepath.Join(t.TempDir(), "absent"))
	_, err := local.New(t.Context(), local.Config{WorkDir: t.TempDir()})
	var be *shim.BinaryError
	if !errors.As(err, &be) || !strings.HasPrefix(err.Error(), "local: shim: no helper binary pi-sandbox-shim") || !strings.Contains(err.Error(), "absent: no such file") {
		t.Fatalf("New = %v, want the *shim.BinaryError", err)
	}
	b, err := local.New(t.Context(), local.Config{WorkDir: t.TempDir(), NoHelper: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if i := b.Info(); i.Has("shim") || i.Has("helper") || !strings.Contains(strings.Join(i.Limits, "\n"), "setsid") {
		t.Errorf("NoHelper without a binary: Info %+v", i)
	}
}
