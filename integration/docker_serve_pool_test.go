package integration

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

// TestDockerServeHTTPPool: serve --http --pool gives each of two go-sdk
// sessions a distinct member of a pool of two (both then claimed); DELETE
// of one session removes its container, SIGTERM the other's. A pool
// without members is refused at the start (exit 2).
func TestDockerServeHTTPPool(t *testing.T) {
	if piBin == "" {
		skipOrFail(t, "no pi-sandbox binary: "+piBinErr.Error())
	}
	name, labelFlags := newPool(t, "servepool")
	if _, errs, code := pi(t, "", "serve", "--http", "127.0.0.1:0", "--pool", name); code != 2 || !strings.Contains(errs, "no pool "+name) {
		t.Errorf("serve --pool of no pool: code %d, stderr %q", code, errs)
	}
	if _, errs, code := pi(t, "", "serve", "--http", "127.0.0.1:0", "--pool", name, "--image", "pi-sandbox/busybox"); code != 2 || !strings.Contains(errs, "--image with --pool") {
		t.Errorf("serve --pool --image: code %d, stderr %q", code, errs)
	}
	ids := poolFill(t, name, 2, labelFlags...)
	if len(ids) != 2 {
		t.Fatalf("pool fill printed %q", ids)
	}
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(tokenFile, []byte("tok\n"), 0o600)
	cmd := exec.Command(piBin, "serve", "--http", "127.0.0.1:0", "--pool", name, "--no-cold", "--token-file", tokenFile)
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
	url, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("no URL: %v (stderr %s)", err, stderr.String())
	}
	url = strings.TrimSpace(url)
	ctx := t.Context()
	members := func() []string {
		ms, err := docker.PoolMembers(ctx, dockerCli, name)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, m := range ms {
			if m.Idle {
				t.Errorf("member %s is still idle", m.Name)
			}
			ids = append(ids, m.ID)
		}
		return ids
	}
	waitMembers := func(want int, why string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for len(members()) != want {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d members, want %d (stderr %s)", why, len(members()), want, stderr.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	bash := func(s *mcp.ClientSession, command string) string {
		t.Helper()
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": command}})
		if err != nil || res.IsError {
			t.Fatalf("%q: %v %v (stderr %s)", command, res, err, stderr.String())
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	session := func() *mcp.ClientSession {
		t.Helper()
		s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: authRT{"tok"}}, DisableStandaloneSSE: true}, nil)
		if err != nil {
			t.Fatalf("go-sdk connect: %v (stderr %s)", err, stderr.String())
		}
		return s
	}
	a := session()
	b := session()
	defer b.Close()
	bash(a, "echo from-a > a.txt")
	if got := bash(b, "ls"); strings.Contains(got, "a.txt") {
		t.Fatalf("b sees a's file: the sessions share a member (ls: %q)", got)
	}
	if got := members(); len(got) != 2 || !slices.Contains(got, ids[0]) || !slices.Contains(got, ids[1]) {
		t.Fatalf("members %q, want both of %q claimed", got, ids)
	}
	a.Close() // DELETE
	waitMembers(1, "after DELETE")
	// b's member is the one left.
	if got := bash(b, "ls"); strings.Contains(got, "a.txt") {
		t.Errorf("b: %q", got)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	err = cmd.Wait()
	exited = true
	if err != nil {
		t.Errorf("after SIGTERM: %v (stderr %s)", err, stderr.String())
	}
	if got := members(); len(got) != 0 {
		t.Errorf("members %q left after SIGTERM", got)
	}
}
