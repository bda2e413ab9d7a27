package sandbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops/local"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
)

// A sandbox on a local backend the program opened: the tools read through
// the confined backend. (Package sandbox/open opens backends by name.)
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello from the sandbox\n"), 0o644)

	lb, err := local.New(ctx, local.Config{WorkDir: dir})
	if err != nil {
		log.Fatal(err)
	}
	sb, err := sandbox.OpenBackend(ctx, lb, sandbox.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Close()
	l, err := sb.NewLoop()
	if err != nil {
		log.Fatal(err)
	}
	b := l.RunBatch(ctx, nil, []loop.ToolCall{
		{ID: "1", Name: "read", Arguments: json.RawMessage(`{"path":"hello.txt"}`)},
		{ID: "2", Name: "read", Arguments: json.RawMessage(`{"path":"/etc/passwd"}`)},
	}, nil)
	for _, r := range b.Results {
		fmt.Printf("%v %q\n", r.IsError(), r.Result.Content[0].Text[:22])
	}
	// Output:
	// false "hello from the sandbox"
	// true "Path /etc/passwd is ou"
}

// A policy: command rules in the before hook, secrets redacted from results.
func ExamplePolicy() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	policy, err := sandbox.ParsePolicy([]byte(`{
  "commands": {"deny": [{"prefix": "rm -rf", "reason": "no recursive deletes"}]},
  "redact": {"patterns": ["sk-[a-z0-9]{8}"]}
}`))
	if err != nil {
		log.Fatal(err)
	}
	lb, err := local.New(ctx, local.Config{WorkDir: dir})
	if err != nil {
		log.Fatal(err)
	}
	sb, err := sandbox.OpenBackend(ctx, lb, sandbox.Config{Policy: policy})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Close()
	l, err := sb.NewLoop()
	if err != nil {
		log.Fatal(err)
	}
	b := l.RunBatch(ctx, nil, []loop.ToolCall{
		{ID: "1", Name: "bash", Arguments: json.RawMessage(`{"command":"cd /tmp && rm -rf x"}`)},
		{ID: "2", Name: "bash", Arguments: json.RawMessage(`{"command":"echo key=sk-abcd1234"}`)},
	}, nil)
	for _, r := range b.Results {
		fmt.Printf("%q\n", r.Result.Content[0].Text)
	}
	// Output:
	// "Command blocked by policy: no recursive deletes"
	// "key=[REDACTED]\n"
}
