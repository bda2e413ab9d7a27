package tcsandbox_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
	"github.com/pi-sandbox/pi-sandbox/ops/docker"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
	"github.com/pi-sandbox/pi-sandbox/sandbox/tcsandbox"
)

// run starts a container labelled for this test and checks, when the test
// ends, that terminating it left nothing behind.
func run(t *testing.T, opts ...testcontainers.ContainerCustomizer) (*tcsandbox.Container, *client.Client) {
	t.Helper()
	cli, err := docker.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	label := "tcsandbox-" + t.Name()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		list, err := docker.List(ctx, cli, "pi-sandbox.test="+label)
		if err != nil {
			t.Error(err)
		}
		for _, s := range list {
			t.Errorf("container %.12s left behind", s.ID)
			docker.Down(ctx, cli, s.ID)
		}
	})
	opts = append(opts, testcontainers.WithLabels(map[string]string{"pi-sandbox.test": label}))
	ctr, err := tcsandbox.Run(t.Context(), testImage, opts...)
	testcontainers.CleanupContainer(t, ctr)
	if err != nil {
		t.Fatal(err)
	}
	return ctr, cli
}

func call(t *testing.T, sb *sandbox.Sandbox, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := sb.Call(t.Context(), name, args)
	if err != nil {
		t.Fatalf("Call(%s): %v", name, err)
	}
	var s strings.Builder
	for _, c := range res.Content {
		s.WriteString(c.Text)
	}
	return s.String(), res.IsError
}

// TestRunProfile: Run creates the hardened container --image creates, with
// our labels, the workspace copied in and owned by the sandbox user, and
// Sandbox works in /workspace, confined.
func TestRunProfile(t *testing.T) {
	project := t.TempDir()
	os.MkdirAll(filepath.Join(project, "src"), 0o755)
	os.WriteFile(filepath.Join(project, "src", "main.go"), []byte("package main\n"), 0o644)
	os.Symlink("src/main.go", filepath.Join(project, "link"))
	ctr, cli := run(t, tcsandbox.WithWorkspace(project))

	ins, err := cli.ContainerInspect(t.Context(), ctr.GetContainerID(), client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hc, cc := ins.Container.HostConfig, ins.Container.Config
	if !hc.ReadonlyRootfs || hc.NetworkMode != "none" || hc.Init == nil || !*hc.Init || len(hc.CapDrop) != 1 || hc.CapDrop[0] != "ALL" ||
		hc.PidsLimit == nil || *hc.PidsLimit != docker.DefaultPidsLimit || hc.Memory != docker.DefaultMemory ||
		len(hc.SecurityOpt) != 1 || hc.SecurityOpt[0] != "no-new-privileges:true" {
		t.Errorf("not the hardened profile: %+v", hc)
	}
	if cc.User != docker.DefaultUser || cc.WorkingDir != docker.DefaultWorkDir ||
		cc.Labels[docker.LabelManaged] != "true" || cc.Labels[docker.LabelKind] != docker.KindEphemeral || cc.Labels[docker.LabelPID] != fmt.Sprint(os.Getpid()) {
		t.Errorf("config: user %q, workdir %q, labels %v", cc.User, cc.WorkingDir, cc.Labels)
	}

	sb, err := ctr.Sandbox(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if got, isErr := call(t, sb, "bash", map[string]any{"command": "pwd; stat -c '%u:%g %n' src/main.go src; readlink link; echo x > src/new && echo writable"}); isErr ||
		got != "/workspace\n1000:1000 src/main.go\n1000:1000 src\nsrc/main.go\nwritable\n" {
		t.Errorf("bash: %q, %v", got, isErr)
	}
	if got, isErr := call(t, sb, "read", map[string]any{"path": "link"}); isErr || got != "package main\n" {
		t.Errorf("read: %q", got)
	}
	if got, isErr := call(t, sb, "read", map[string]any{"path": "/etc/passwd"}); !isErr || !strings.Contains(got, "outside the sandbox") {
		t.Errorf("confinement: %q", got)
	}
}

// TestRunModifiersAfterProfile: testcontainers' own options apply, and a
// HostConfigModifier runs after the profile (so it can relax it).
func TestRunModifiersAfterProfile(t *testing.T) {
	ctr, cli := run(t,
		tcsandbox.WithPolicy(sandbox.Policy{Env: sandbox.EnvPolicy{Set: map[string]string{"FROM_POLICY": "p"}}}),
		testcontainers.WithEnv(map[string]string{"FROM_TC": "tc"}),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) { hc.Memory, hc.MemorySwap = 256<<20, 256<<20 }),
	)
	ins, err := cli.ContainerInspect(t.Context(), ctr.GetContainerID(), client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ins.Container.HostConfig.Memory != 256<<20 || !ins.Container.HostConfig.ReadonlyRootfs {
		t.Errorf("memory %d, read-only %v", ins.Container.HostConfig.Memory, ins.Container.HostConfig.ReadonlyRootfs)
	}
	sb, err := ctr.Sandbox(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if got, _ := call(t, sb, "bash", map[string]any{"command": "echo $FROM_TC $FROM_POLICY $PAGER"}); got != "tc p cat\n" {
		t.Errorf("environment: %q", got)
	}
}

// TestRunRuntime: WithRuntime("runsc") runs the container on gVisor; an
// unknown runtime fails before anything is created.
func TestRunRuntime(t *testing.T) {
	_, err := tcsandbox.Run(t.Context(), testImage, tcsandbox.WithRuntime("no-such-runtime"))
	if err == nil || !strings.Contains(err.Error(), `no runtime "no-such-runtime"`) {
		t.Fatalf("unknown runtime: %v", err)
	}
	cli, err := docker.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	info, err := cli.Info(t.Context(), client.InfoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := info.Info.Runtimes["runsc"]; !ok {
		testenv.SkipOrFail(t, "the engine has no runtime runsc (make runtimes registers it)")
	}
	ctr, cli := run(t, tcsandbox.WithRuntime("runsc"))
	ins, err := cli.ContainerInspect(t.Context(), ctr.GetContainerID(), client.ContainerInspectOptions{})
	if err != nil || ins.Container.HostConfig.Runtime != "runsc" {
		t.Fatalf("runtime %q, %v", ins.Container.HostConfig.Runtime, err)
	}
	sb, err := ctr.Sandbox(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if got, _ := call(t, sb, "bash", map[string]any{"command": "dmesg | head -1"}); !strings.Contains(got, "gVisor") {
		t.Errorf("dmesg: %q, want gVisor's", got)
	}
}
