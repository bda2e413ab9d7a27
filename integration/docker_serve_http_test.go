package integration

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/client"
	mcpgotransport "github.com/mark3labs/mcp-go/client/transport"
	mcpgotypes "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

type authRT struct{ token string }

func (a authRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+a.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestDockerServeHTTP: serve --http --image gives a go-sdk session and an
// mcp-go session a container each, where each writes and reads its own
// files and sees none of the other's; DELETE removes one container, the
// idle time the other; SIGTERM ends a third session, removes its container
// and exits 0.
func TestDockerServeHTTP(t *testing.T) {
	needImage(t, "pi-sandbox/busybox")
	if piBin == "" {
		skipOrFail(t, "no pi-sandbox binary: "+piBinErr.Error())
	}
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(tokenFile, []byte("  tok-a \nother\n"), 0o600)
	cmd := exec.Command(piBin, "serve", "--http", "127.0.0.1:0", "--image", "pi-sandbox/busybox", "--token-file", tokenFile, "--session-idle", "3s")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := false
	defer func() {
		if !exited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	pid := cmd.Process.Pid
	t.Cleanup(func() { checkNoContainers(t, docker.LabelPID+"="+strconv.Itoa(pid)) })
	url, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("no URL: %v", err)
	}
	url = strings.TrimSpace(url)
	containers := func() int {
		list, err := docker.List(context.Background(), dockerCli, docker.LabelPID+"="+strconv.Itoa(pid))
		if err != nil {
			t.Fatal(err)
		}
		return len(list)
	}
	waitContainers := func(want int, why string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for containers() != want {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d containers, want %d (stderr %s)", why, containers(), want, stderr.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	ctx := t.Context()

	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	a, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: authRT{"tok-a"}}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("go-sdk connect: %v (stderr %s)", err, stderr.String())
	}
	b, err := mcpgo.NewStreamableHttpClient(url, mcpgotransport.WithHTTPBasicClient(&http.Client{Transport: authRT{"other"}}))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var init mcpgotypes.InitializeRequest
	init.Params.ClientInfo = mcpgotypes.Implementation{Name: "test", Version: "1"}
	init.Params.ProtocolVersion = "2025-06-18"
	if _, err := b.Initialize(ctx, init); err != nil {
		t.Fatalf("mcp-go initialize: %v", err)
	}
	callA := func(cmd string) string {
		t.Helper()
		res, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": cmd}})
		if err != nil || res.IsError {
			t.Fatalf("a %q: %v %v", cmd, res, err)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	callB := func(cmd string) string {
		t.Helper()
		var req mcpgotypes.CallToolRequest
		req.Params.Name, req.Params.Arguments = "bash", map[string]any{"command": cmd}
		res, err := b.CallTool(ctx, req)
		if err != nil || res.IsError {
			t.Fatalf("b %q: %v %v", cmd, res, err)
		}
		return res.Content[0].(mcpgotypes.TextContent).Text
	}
	callA("echo from-a > a.txt")
	callB("echo from-b > b.txt")
	if got := callA("cat a.txt; ls /workspace; hostname"); !strings.Contains(got, "from-a") || strings.Contains(got, "b.txt") {
		t.Errorf("a: %q", got)
	}
	if got := callB("cat b.txt; ls /workspace"); !strings.Contains(got, "from-b") || strings.Contains(got, "a.txt") {
		t.Errorf("b: %q", got)
	}
	if n := containers(); n != 2 {
		t.Fatalf("%d containers for 2 sessions", n)
	}
	a.Close() // DELETE
	waitContainers(1, "after DELETE")
	waitContainers(0, "after the idle time") // b makes no request
	b.Close()

	third, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: authRT{"tok-a"}}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	waitContainers(1, "a third session")
	start := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	err = cmd.Wait()
	exited = true
	if err != nil {
		t.Errorf("after SIGTERM: %v (stderr %s)", err, stderr.String())
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("SIGTERM took %v", d)
	}
	if n := containers(); n != 0 {
		t.Errorf("%d containers left after SIGTERM", n)
	}
}
