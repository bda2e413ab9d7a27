package open_test

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
	"github.com/pi-sandbox/pi-sandbox/sandbox/open"
)

// A local sandbox opened by name, as --backend local does.
func ExampleOpen() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello from the sandbox\n"), 0o644)

	sb, err := open.Open(ctx, open.Config{Backend: "local", WorkDir: dir})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Close()
	l, err := sb.NewLoop()
	if err != nil {
		log.Fatal(err)
	}
	b := l.RunBatch(ctx, nil, []loop.ToolCall{{ID: "1", Name: "read", Arguments: json.RawMessage(`{"path":"hello.txt"}`)}}, nil)
	fmt.Print(b.Results[0].Result.Content[0].Text)
	// Output: hello from the sandbox
}

// A sandbox in a container that already runs (docker ps), used as it is.
func ExampleContainer() {
	ctx := context.Background()
	sb, err := open.Container(ctx, "my-dev-container", open.Config{
		WorkDir: "/src",
		Config:  sandbox.Config{Policy: sandbox.Policy{Env: sandbox.EnvPolicy{Allow: []string{"GOFLAGS"}}}},
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
func ExampleSSHClient() {
	ctx := context.Background()
	var client *ssh.Client // from ssh.Dial, with a verified host key
	sb, err := open.SSHClient(ctx, client, open.Config{WorkDir: "/home/dev/project"})
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
