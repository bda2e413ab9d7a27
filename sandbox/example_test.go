package sandbox_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops/local"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
)

// Open a sandbox and call a tool. The backend here is this machine;
// docker.New, ssh.New and k8s.New make the others (package sandbox/open
// opens them by name, as the CLI's flags do), and Config adds a policy.
func Example() {
	ctx := context.Background()
	b, err := local.New(ctx, local.Config{})
	if err != nil {
		log.Fatal(err)
	}
	sb, err := sandbox.OpenBackend(ctx, b, sandbox.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Close()
	res, err := sb.Call(ctx, "bash", map[string]any{"command": "echo hello from the sandbox"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(res.Text())
	// Output: hello from the sandbox
}

// A loop runs batches of calls, as a model makes them; the tools work
// through the confined backend, so a path outside the roots is an error
// result.
func ExampleSandbox_NewLoop() {
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
		fmt.Printf("%v %q\n", r.IsError(), r.Result.Text()[:22])
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
		fmt.Printf("%q\n", r.Result.Text())
	}
	// Output:
	// "Command blocked by policy: no recursive deletes"
	// "key=[REDACTED]\n"
}

// Reach a server that a command started inside the sandbox: Dial connects
// to the target's own 127.0.0.1 (over the helper's stream for a container,
// a pod or an ssh host), and Forward serves a host listener the same way.
func ExampleSandbox_Dial() {
	ctx := context.Background()
	b, err := local.New(ctx, local.Config{})
	if err != nil {
		log.Fatal(err)
	}
	sb, err := sandbox.OpenBackend(ctx, b, sandbox.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Close()
	// A server in the target (here: this machine).
	srv, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	go func() {
		if c, err := srv.Accept(); err == nil {
			io.WriteString(c, "hello from port 8080\n")
			c.Close()
		}
	}()
	c, err := sb.Dial(ctx, srv.Addr().(*net.TCPAddr).Port)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	line, _ := bufio.NewReader(c).ReadString('\n')
	fmt.Print(line)
	// Forward would serve a host address instead, until ctx ends:
	//	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	//	err = sb.Forward(ctx, ln, 8080, sandbox.ForwardOptions{})

	// Output: hello from port 8080
}
