package open_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/images"
	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops/docker"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
	"github.com/pi-sandbox/pi-sandbox/sandbox/open"
	"github.com/pi-sandbox/pi-sandbox/sandbox/sandboxtest"
)

const dockerImage = "pi-sandbox/busybox"

func skipOrFail(t *testing.T, reason string) {
	t.Helper()
	testenv.SkipOrFail(t, reason)
}

// needEngine returns a client of a reachable engine that has the busybox
// image (built when missing, in seconds), or skips (fails under CI=true).
func needEngine(t *testing.T) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli, err := docker.NewClient()
	if err == nil {
		_, err = docker.Ping(ctx, cli)
	}
	if err != nil {
		if cli != nil {
			cli.Close()
		}
		skipOrFail(t, "no Docker engine: "+err.Error())
	}
	t.Cleanup(func() { cli.Close() })
	if err := (&images.Builder{Client: cli}).Ensure(ctx, dockerImage); err != nil {
		skipOrFail(t, "image "+dockerImage+": "+err.Error())
	}
	return cli
}

// upContainer starts a hardened busybox container and removes it when the
// test ends.
func upContainer(t *testing.T) string {
	t.Helper()
	cli := needEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id, err := docker.Up(ctx, docker.Config{Image: dockerImage, Labels: map[string]string{"pi-sandbox.test": "sandbox-" + t.Name()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { downContainer(t, cli, id) })
	return id
}

func downContainer(t *testing.T, cli *client.Client, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := docker.Down(ctx, cli, id); err != nil {
		t.Errorf("down: %v", err)
	}
}

// containerDirs makes a work and an outside directory in the container's
// /tmp through a first backend.
func containerDirs(t *testing.T, id, base string) (work, outside string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := docker.New(ctx, docker.Config{Container: id})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	work, outside = base+"/work", base+"/outside"
	for _, d := range []string{work, outside} {
		if err := b.MkdirAll(ctx, d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return work, outside
}

func TestEscapesDocker(t *testing.T) {
	id := upContainer(t)
	for _, noHelper := range []bool{false, true} {
		t.Run(map[bool]string{false: "helper", true: "nohelper"}[noHelper], func(t *testing.T) { escapesDocker(t, id, noHelper) })
	}
}

func escapesDocker(t *testing.T, id string, noHelper bool) {
	sandboxtest.Run(t, func(t *testing.T) sandboxtest.Target {
		w, o := containerDirs(t, id, map[bool]string{false: "/tmp/esc", true: "/tmp/esc-nohelper"}[noHelper])
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		b, err := docker.New(ctx, docker.Config{Container: id, WorkDir: w, NoHelper: noHelper})
		if err != nil {
			t.Fatal(err)
		}
		return sandboxtest.Target{Backend: b, Outside: o}
	})
}

// TestOpenContainer opens a sandbox in an existing container: the tools
// work, confinement applies, only allow-listed host variables pass, and
// Close leaves the container running.
func TestOpenContainer(t *testing.T) {
	id := upContainer(t)
	w, o := containerDirs(t, id, "/tmp/oc")
	t.Setenv("PI_DOCKER_PASS", "passed")
	t.Setenv("PI_DOCKER_HIDDEN", "hidden")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sb, err := open.Container(ctx, id, open.Config{WorkDir: w, Config: sandbox.Config{Policy: sandbox.Policy{
		Env:      sandbox.EnvPolicy{Allow: []string{"PI_DOCKER_PASS"}},
		Commands: sandbox.CommandRules{Deny: []sandbox.Rule{{Prefix: "wget"}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := sb.NewLoop()
	if err != nil {
		t.Fatal(err)
	}
	callTool := func(name, args string) (string, bool) {
		b := l.RunBatch(ctx, nil, []loop.ToolCall{{ID: "x", Name: name, Arguments: json.RawMessage(args)}}, nil)
		var s strings.Builder
		for _, c := range b.Results[0].Result.Content {
			s.WriteString(c.Text)
		}
		return s.String(), b.Results[0].Result.IsError
	}
	if got, isErr := callTool("bash", `{"command":"echo \"$PI_DOCKER_PASS|${PI_DOCKER_HIDDEN-unset}|$(pwd)\""}`); isErr || got != "passed|unset|"+w+"\n" {
		t.Errorf("bash: %q", got)
	}
	if got, isErr := callTool("bash", `{"command":"wget http://example.com"}`); !isErr || got != `Command blocked by policy: deny prefix "wget"` {
		t.Errorf("policy: %q", got)
	}
	if got, isErr := callTool("write", `{"path":"a.txt","content":"hi"}`); isErr {
		t.Errorf("write: %q", got)
	}
	if got, isErr := callTool("read", `{"path":"a.txt"}`); isErr || got != "hi" {
		t.Errorf("read: %q", got)
	}
	if got, isErr := callTool("write", `{"path":"`+o+`/x","content":"pwned"}`); !isErr || !strings.Contains(got, "outside the sandbox") {
		t.Errorf("outside write: %q", got)
	}
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	// The container is still there and usable.
	again, err := open.Container(ctx, id, open.Config{WorkDir: w})
	if err != nil {
		t.Fatalf("reopen after Close: %v", err)
	}
	again.Close()
}

// TestOpenDockerImage opens an ephemeral container the way --backend docker
// --image does, with the policy's environment, and Close removes it.
func TestOpenDockerImage(t *testing.T) {
	needEngine(t)
	t.Setenv("PI_DOCKER_PASS", "passed")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sb, err := open.Open(ctx, open.Config{Backend: "docker", Docker: open.DockerConfig{Image: dockerImage},
		Config: sandbox.Config{Policy: sandbox.Policy{Env: sandbox.EnvPolicy{Allow: []string{"PI_DOCKER_PASS"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := bashIn(t, ctx, sb, "echo $PI_DOCKER_PASS; pwd; id -u"); got != "passed\n/workspace\n1000\n" {
		t.Errorf("bash: %q", got)
	}
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
}

// bashIn runs command through sb's loop and returns the result's text;
// it closes sb and fails when no loop can be made.
func bashIn(t *testing.T, ctx context.Context, sb *sandbox.Sandbox, command string) string {
	t.Helper()
	l, err := sb.NewLoop()
	if err != nil {
		sb.Close()
		t.Fatal(err)
	}
	args, _ := json.Marshal(map[string]string{"command": command})
	b := l.RunBatch(ctx, nil, []loop.ToolCall{{ID: "x", Name: "bash", Arguments: args}}, nil)
	return b.Results[0].Result.Content[0].Text
}
