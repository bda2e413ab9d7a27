package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops/local"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
)

// TestCall: one call goes through validation, the policy and the audit log,
// and tool failures are error results, not errors.
func TestCall(t *testing.T) {
	dir := t.TempDir()
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	lb, err := local.New(t.Context(), local.Config{WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := sandbox.OpenBackend(t.Context(), lb, sandbox.Config{Policy: sandbox.Policy{
		Commands: sandbox.CommandRules{Deny: []sandbox.Rule{{Prefix: "rm", Reason: "no deletes"}}},
		AuditLog: audit,
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	text := func(name string, args map[string]any) (string, bool) {
		t.Helper()
		res, err := sb.Call(t.Context(), name, args)
		if err != nil {
			t.Fatalf("Call(%s): %v", name, err)
		}
		return res.Content[0].Text, res.IsError
	}
	if got, isErr := text("write", map[string]any{"path": "a.txt", "content": "hi\n"}); isErr {
		t.Errorf("write: %q", got)
	}
	// "2" is coerced to a number as pi does.
	if got, isErr := text("read", map[string]any{"path": "a.txt", "limit": "2"}); isErr || got != "hi\n" {
		t.Errorf("read: %q, %v", got, isErr)
	}
	if got, isErr := text("bash", map[string]any{"command": "rm a.txt"}); !isErr || got != "Command blocked by policy: no deletes" {
		t.Errorf("blocked bash: %q, %v", got, isErr)
	}
	if got, isErr := text("read", map[string]any{}); !isErr || !strings.Contains(got, "path") {
		t.Errorf("invalid arguments: %q, %v", got, isErr)
	}
	if got, isErr := text("nope", nil); !isErr || !strings.Contains(got, "nope") {
		t.Errorf("unknown tool: %q, %v", got, isErr)
	}
	if _, err := sb.Call(t.Context(), "write", map[string]any{"path": "x", "content": func() {}}); err == nil {
		t.Error("unencodable arguments: no error")
	}
	b, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	// write and read: started + ok each; the blocked bash: one line.
	if n := strings.Count(string(b), "\n"); n != 5 || !strings.Contains(string(b), `"outcome":"blocked"`) {
		t.Errorf("audit log has %d lines:\n%s", n, b)
	}
}
