package tcsandbox_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/testcontainers/testcontainers-go"

	"github.com/pi-sandbox/pi-sandbox/sandbox"
	"github.com/pi-sandbox/pi-sandbox/sandbox/tcsandbox"
)

// A hardened container with a project copied in, and the agent's tools on
// it under a policy.
func ExampleRun() {
	ctx := context.Background()
	project, err := os.MkdirTemp("", "project")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(project)
	os.WriteFile(filepath.Join(project, "notes.txt"), []byte("todo: ship it\n"), 0o644)

	ctr, err := tcsandbox.Run(ctx, "pi-sandbox/busybox",
		tcsandbox.WithWorkspace(project),
		tcsandbox.WithPolicy(sandbox.Policy{DenyTools: []string{"write"}}),
		testcontainers.WithLabels(map[string]string{"pi-sandbox.test": "tcsandbox-example"}),
	)
	defer func() {
		if err := testcontainers.TerminateContainer(ctr); err != nil {
			log.Print(err)
		}
	}()
	if err != nil {
		log.Print(err) // not Fatal: the deferred Terminate must run
		return
	}
	sb, err := ctr.Sandbox(ctx)
	if err != nil {
		log.Print(err)
		return
	}
	defer sb.Close()

	res, _ := sb.Call(ctx, "read", map[string]any{"path": "notes.txt"})
	fmt.Print(res.Content[0].Text)
	res, _ = sb.Call(ctx, "bash", map[string]any{"command": "id -u; pwd; touch new && echo writable"})
	fmt.Print(res.Content[0].Text)
	res, _ = sb.Call(ctx, "write", map[string]any{"path": "x", "content": "y"})
	fmt.Println(res.IsError)
	// Output:
	// todo: ship it
	// 1000
	// /workspace
	// writable
	// true
}
