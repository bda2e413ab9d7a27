package sandbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"golang.org/x/crypto/ssh"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
)

// A local sandbox: the tools read through the confined backend.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello from the sandbox\n"), 0o644)

	sb, err := sandbox.Open(ctx, sandbox.Config{WorkDir: dir})
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
	sb, err := sandbox.Open(ctx, sandbox.Config{WorkDir: dir, Policy: policy})
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

// A sandbox in a container that already runs (docker ps), used as it is.
func ExampleOpenContainer() {
	ctx := context.Background()
	sb, err := sandbox.OpenContainer(ctx, "my-dev-container", sandbox.Config{
		WorkDir: "/src",
		Policy:  sandbox.Policy{Env: sandbox.EnvPolicy{Allow: []string{"GOFLAGS"}}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Close()
	l, err := sb.NewLoop()
	if err != nil {
		log.Fatal(err)
	}
	b := l.RunBatch(ctx, nil, []loop.ToolCall{{ID: "1", Name: "bash", Arguments: json.RawMessage(`{"command":"go test ./..."}`)}}, nil)
	fmt.Println(b.Results[0].Result.Content[0].Text)
}

// A sandbox over an SSH connection the program already holds.
func ExampleOpenSSHClient() {
	ctx := context.Background()
	var client *ssh.Client // from ssh.Dial, with a verified host key
	sb, err := sandbox.OpenSSHClient(ctx, client, sandbox.Config{WorkDir: "/home/dev/project"})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Close() // leaves client open
	l, err := sb.NewLoop()
	if err != nil {
		log.Fatal(err)
	}
	b := l.RunBatch(ctx, nil, []loop.ToolCall{{ID: "1", Name: "ls", Arguments: json.RawMessage(`{}`)}}, nil)
	fmt.Println(b.Results[0].Result.Content[0].Text)
}
