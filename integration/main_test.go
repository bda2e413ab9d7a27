// Package integration tests pi-sandbox against a real Docker engine (and,
// from the ssh_*.go files, a real sshd), with fault injection.
//
// Tests skip with the reason when the engine is missing, except under
// CI=true, where they fail. TestMain builds the images it needs when their
// content tag is missing (busybox in a second; debian with mmdebstrap in
// about half a minute, needing root and the apt mirror) and a static
// pi-sandbox binary for the shim and the CLI tests.
package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/images"
	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

// runLabel marks everything this test run creates in the engine.
const runLabel = "pi-sandbox.test-run"

var (
	runID = func() string {
		var b [6]byte
		rand.Read(b[:])
		return hex.EncodeToString(b[:])
	}()

	// dockerCli is nil when the engine is unreachable; dockerSkip says why.
	dockerCli  *client.Client
	dockerSkip string
	// imageErr records images that could not be built.
	imageErr = map[string]error{}
	// piBin is a static pi-sandbox binary ("" when it did not build).
	piBin    string
	piBinErr error
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "pi-sandbox-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	flag.Parse()
	if testing.Short() {
		// make test-unit: no engine work at all.
		dockerSkip = "integration tests do not run with -short"
		return m.Run()
	}
	buildPiBin(tmp)
	setupDocker()
	code := m.Run()
	if left := k8sLeftovers(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "integration: pods left by this run (deleted now): %v\n", left)
		code = 1
	}
	if dockerCli != nil {
		if left := leftovers(); len(left) > 0 {
			fmt.Fprintf(os.Stderr, "integration: containers left by this run (removed now): %v\n", left)
			code = 1
		}
		dockerCli.Close()
	}
	return code
}

// buildPiBin builds ./cmd/pi-sandbox with CGO_ENABLED=0 (static: it is
// uploaded into containers as the shim) unless PI_SANDBOX_SHIM_BIN names
// one already.
func buildPiBin(tmp string) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(file))
	build := func(pkg, out string, ldflags ...string) error {
		args := append([]string{"build", "-trimpath"}, ldflags...)
		cmd := exec.Command("go", append(args, "-o", out, pkg)...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
		}
		return nil
	}
	if os.Getenv("PI_SANDBOX_SHIM_BIN") == "" {
		out := filepath.Join(tmp, "pi-sandbox-shim")
		if err := build("./cmd/pi-sandbox-shim", out, "-ldflags=-s -w"); err != nil {
			piBinErr = err
			return
		}
		os.Setenv("PI_SANDBOX_SHIM_BIN", out)
	}
	if p := os.Getenv("PI_SANDBOX_BIN"); p != "" {
		piBin = p
		return
	}
	out := filepath.Join(tmp, "pi-sandbox")
	if err := build("./cmd/pi-sandbox", out); err != nil {
		piBinErr = err
		return
	}
	piBin = out
}

func setupDocker() {
	cli, err := docker.NewClient()
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err = docker.Ping(ctx, cli)
		cancel()
	}
	if err != nil {
		dockerSkip = "no Docker engine: " + err.Error()
		if cli != nil {
			cli.Close()
		}
		return
	}
	dockerCli = cli
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b := &images.Builder{Client: cli, Progress: os.Stderr}
	for _, name := range []string{"pi-sandbox/busybox", "pi-sandbox/debian"} {
		if err := b.Ensure(ctx, name); err != nil {
			imageErr[name] = err
		}
	}
}

// needDocker skips (or fails under CI=true) when the engine is missing.
func needDocker(t testing.TB) *client.Client {
	t.Helper()
	if testing.Short() {
		t.Skip(dockerSkip)
	}
	if dockerCli == nil {
		skipOrFail(t, dockerSkip)
	}
	return dockerCli
}

// needImage also requires image to have been built.
func needImage(t testing.TB, image string) *client.Client {
	t.Helper()
	cli := needDocker(t)
	if err := imageErr[image]; err != nil {
		skipOrFail(t, fmt.Sprintf("image %s could not be built: %v", image, err))
	}
	return cli
}

func skipOrFail(t testing.TB, reason string) {
	t.Helper()
	testenv.SkipOrFail(t, reason)
}

// labels returns the per-run label for Config.Labels.
func labels() map[string]string { return map[string]string{runLabel: runID} }

// leftovers removes and returns the containers of this run still present.
func leftovers() []string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := docker.List(ctx, dockerCli, runLabel+"="+runID)
	if err != nil {
		return []string{err.Error()}
	}
	var ids []string
	for _, s := range list {
		ids = append(ids, s.ID[:12])
		docker.Down(ctx, dockerCli, s.ID)
	}
	return ids
}

// checkNoContainers fails t when containers with this run's label and the
// extra label remain; for t.Cleanup in tests that create containers.
func checkNoContainers(t testing.TB, extra string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := docker.List(ctx, dockerCli, runLabel+"="+runID, extra)
	if err != nil {
		t.Error(err)
		return
	}
	for _, s := range list {
		t.Errorf("container %s (%s) left behind", s.ID[:12], s.State)
		docker.Down(ctx, dockerCli, s.ID)
	}
}
