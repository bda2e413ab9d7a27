package loop_test

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/loop/looptest"
)

// TestMain fails the run when goroutines started by the tests outlive them
// (a batch must never leave a call running).
func TestMain(m *testing.M) {
	before := runtime.NumGoroutine()
	code := m.Run()
	if code == 0 {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond) // polling: exiting goroutines have no marker
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<20)
			fmt.Fprintf(os.Stderr, "loop tests leaked %d goroutines:\n%s\n", n-before, buf[:runtime.Stack(buf, true)])
			code = 1
		}
	}
	os.Exit(code)
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
