package native_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/native"
)

// TestBackgroundKept: with Background, a process the command left running
// outlives the call (which returns at once) and Close kills it.
func TestBackgroundKept(t *testing.T) {
	b, err := native.New(t.Context(), withShim(native.Config{WorkDir: t.TempDir(), Background: true}))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var out strings.Builder
	start := time.Now()
	if err := b.Run(t.Context(), &ops.Cmd{Command: "sleep 300 & echo started", Output: &out}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second || out.String() != "started\n" {
		t.Fatalf("Run took %s, output %q", d, out.String())
	}
	ps, err := b.Processes(t.Context())
	if err != nil || len(ps) != 1 || !strings.HasPrefix(ps[0].Command, "sleep 300") {
		t.Fatalf("Processes = %+v, %v; want the sleep", ps, err)
	}
}
