package loop_test

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/loop/looptest"
)

// TestMain fails the run when goroutines running our code outlive the
// tests (a batch must never leave a call running).
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		deadline := time.Now().Add(5 * time.Second)
		leaked := ours()
		for len(leaked) > 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond) // polling: exiting goroutines have no marker
			leaked = ours()
		}
		if len(leaked) > 0 {
			fmt.Fprintf(os.Stderr, "loop tests leaked %d goroutines:\n%s\n", len(leaked), strings.Join(leaked, "\n\n"))
			code = 1
		}
	}
	os.Exit(code)
}

// ours returns the stacks of goroutines running code of this module, other
// than TestMain's.
func ours() []string {
	buf := make([]byte, 1<<20)
	var out []string
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "github.com/pi-sandbox/pi-sandbox/") && !strings.Contains(g, "loop_test.TestMain") {
			out = append(out, g)
		}
	}
	return out
}
func TestNewRejects(t *testing.T) {
	if _, err := loop.New([]loop.Tool{looptest.Echo(), looptest.Echo()}); err == nil {
		t.Error("two tools with one name accepted")
	}
	bad := &looptest.Func{ToolName: "bad", Schema: `{"type":"object","properties":{"x":{"type":"nonsense"}}}`}
	if _, err := loop.New([]loop.Tool{bad}); err == nil {
		t.Error("an invalid schema accepted")
	}
}
