package sandbox_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops/local"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
)

// TestEnvAllowListOnCallerBackend: a local backend the caller opened (whose
// commands start from the host environment) gets the allow-list too, not
// only one the sandbox opened itself.
func TestEnvAllowListOnCallerBackend(t *testing.T) {
	t.Setenv("PI_TEST_PASS", "passed")
	t.Setenv("PI_TEST_HIDDEN", "hidden")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := local.New(ctx, local.Config{WorkDir: t.TempDir(), SpillDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := sandbox.OpenBackend(ctx, b, sandbox.Config{Policy: sandbox.Policy{Env: sandbox.EnvPolicy{
		Allow: []string{"PI_TEST_PASS"},
		Set:   map[string]string{"PI_TEST_FIXED": "fixed"},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	l, err := sb.NewLoop()
	if err != nil {
		t.Fatal(err)
	}
	r := l.RunBatch(ctx, nil, []loop.ToolCall{{ID: "1", Name: "bash",
		Arguments: json.RawMessage(`{"command":"echo \"$PI_TEST_PASS|${PI_TEST_HIDDEN-unset}|$PI_TEST_FIXED|${HOME-nohome}\""}`)}}, nil).Results[0].Result
	if got, want := r.Content[0].Text, "passed|unset|fixed|nohome\n"; got != want {
		t.Errorf("bash printed %q, want %q", got, want)
	}
}
