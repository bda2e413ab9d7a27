package execops

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestScriptOutputBounded: a script whose stdout or stderr does not end
// (a hostile target) neither grows the host's memory nor hangs the call.
func TestScriptOutputBounded(t *testing.T) {
	b := newHostBackend(t).(*hostBackend)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.TotalAlloc

	_, err := b.Ops.Script(ctx, "yes aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", nil)
	if err == nil || !strings.Contains(err.Error(), "hostexec: a script's output exceeds 16 MiB") {
		t.Fatalf("endless stdout: %v", err)
	}
	res, err := b.Ops.Script(ctx, "head -c 100000000 /dev/zero | tr '\\0' x >&2; echo out", nil)
	if err != nil {
		t.Fatalf("long stderr: %v", err)
	}
	if res.Code != 0 || string(res.Stdout) != "out\n" || len(res.Stderr) > maxStderrHead+maxStderrTail+16 {
		t.Fatalf("long stderr: code %d, stdout %q, %d bytes of stderr", res.Code, res.Stdout, len(res.Stderr))
	}
	runtime.ReadMemStats(&ms)
	if grew := ms.TotalAlloc - base; grew > 256<<20 {
		t.Fatalf("%d MiB allocated", grew>>20)
	}
}
