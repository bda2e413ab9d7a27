package sandbox_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
	"github.com/pi-sandbox/pi-sandbox/ops/local"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
)

// TestProcesses: a server a bash call starts in the background keeps
// running across calls of the sandbox, Processes lists it, and Close ends
// it.
func TestProcesses(t *testing.T) {
	dir := t.TempDir()
	lb, err := local.New(t.Context(), local.Config{WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := sandbox.OpenBackend(t.Context(), lb, sandbox.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	res, err := sb.Call(t.Context(), "bash", map[string]any{"command": "sleep 300 & echo $! > pid; echo started"})
	if err != nil || res.IsError {
		t.Fatalf("bash: %v %+v", err, res)
	}
	res, err = sb.Call(t.Context(), "bash", map[string]any{"command": `kill -0 "$(cat pid)" && echo alive`})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].Text, "alive") {
		t.Fatalf("the background process did not survive its call: %v %+v", err, res)
	}
	ps, err := sb.Processes(t.Context())
	if err != nil || len(ps) != 1 || !strings.HasPrefix(ps[0].Command, "sleep 300") || time.Since(ps[0].Started) > time.Minute {
		t.Fatalf("Processes = %+v, %v", ps, err)
	}
	pid := ps[0].PID
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for testenv.Alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("background process %d alive 3 s after Close", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
