package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"

	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/helper"
)

// testLabel marks what the engine tests of this package create.
var testLabel = map[string]string{"pi-sandbox.test": "ops-docker-engine"}

// needEngine returns an engine client, or skips (fails under CI=true) when
// the engine, the image or the shim binary is missing.
func needEngine(t *testing.T, image string) *client.Client {
	t.Helper()
	if testing.Short() {
		testenv.SkipOrFail(t, "needs a Docker engine (not with -short)")
	}
	if os.Getenv("PI_SANDBOX_SHIM_BIN") == "" {
		testenv.SkipOrFail(t, "PI_SANDBOX_SHIM_BIN is not set (make test sets it)")
	}
	cli, err := NewClient()
	if err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	t.Cleanup(func() { cli.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := Ping(ctx, cli); err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	if _, err := cli.ImageInspect(ctx, image); err != nil {
		testenv.SkipOrFail(t, fmt.Sprintf("image %s: %v", image, err))
	}
	return cli
}

// openEngine opens a backend with cfg and closes it at the end of the test.
func openEngine(t *testing.T, cfg Config) *Backend {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg.Labels = testLabel
	b, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if b.h == nil {
		t.Fatalf("no helper: %v", b.Info().Limits)
	}
	return b
}

// The targets a docker backend serves, each with its own helper: an
// ephemeral container's (`__shim serve --end-container`), an up sandbox's
// (the relay to its daemon), a foreign container's (`__shim serve`).
var engineTargets = []struct {
	name string
	open func(t *testing.T, cli *client.Client, image string) *Backend
}{
	{"ephemeral", func(t *testing.T, cli *client.Client, image string) *Backend {
		return openEngine(t, Config{Image: image})
	}},
	{"up", func(t *testing.T, cli *client.Client, image string) *Backend {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		id, err := Up(ctx, Config{Image: image, Labels: testLabel})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := Down(ctx, cli, id); err != nil {
				t.Error(err)
			}
		})
		return openEngine(t, Config{Container: id})
	}},
	{"foreign", func(t *testing.T, cli *client.Client, image string) *Backend {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
			Config:     &container.Config{Image: image, User: "1000:1000", WorkingDir: "/tmp", Labels: testLabel, Entrypoint: []string{"/bin/sh", "-c", "trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done"}},
			HostConfig: &container.HostConfig{NetworkMode: "none", Tmpfs: map[string]string{"/tmp": "rw,exec,mode=1777"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { removeContainer(cli, res.ID) })
		if _, err := cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
			t.Fatal(err)
		}
		return openEngine(t, Config{Container: res.ID})
	}},
}

// overBound are calls of a real helper whose reply breaks a bound of the
// host (its session ends), in the directory that setupOverBound makes: a
// readdir and an ls (listdir) over helper.MaxListReply. (A grep line does
// not reach the bound of a search line: the helper cuts it first.)
var overBound = []struct {
	name string
	call func(ctx context.Context, b *Backend, dir string) error
	text string // what the error says
}{
	{"readdir", func(ctx context.Context, b *Backend, dir string) error {
		_, err := b.ReadDir(ctx, dir+"/big")
		return err
	}, "docker: helper: the helper's fs reply exceeds 8 MiB"},
	{"ls", func(ctx context.Context, b *Backend, dir string) error {
		_, _, err := b.ListDir(ctx, dir+"/big")
		return err
	}, "docker: helper: the helper's fs reply exceeds 8 MiB"},
}

// setupOverBound makes in dir: big, a directory of 40,000 entries of
// 200-byte names (a listing of some 11 MB, over helper.MaxListReply), and
// small/a.txt.
func setupOverBound(t *testing.T, b *Backend, dir string) {
	t.Helper()
	long := strings.Repeat("n", 190)
	mk := "set -e; mkdir -p " + dir + "/big " + dir + "/small; cd " + dir + "/big; " +
		"i=0; while [ $i -lt 40000 ]; do echo " + long + "$i; i=$((i+1)); done | xargs touch; " +
		"echo hi > ../small/a.txt; ls | wc -l"
	var out bytes.Buffer
	if err := b.Run(t.Context(), &ops.Cmd{Command: mk, Output: &out}); err != nil || strings.TrimSpace(out.String()) != "40000" {
		t.Fatalf("making the directory: %q, %v", out.String(), err)
	}
}

// helpers counts the helper sessions running in the container (the
// processes `__shim serve` and `__shim relay`, not an up sandbox's daemon)
// and the hold files left.
func helpers(t *testing.T, b *Backend) string {
	t.Helper()
	var out bytes.Buffer
	cmd := `n=0; for p in /proc/[0-9]*; do c=$(tr '\0' ' ' <$p/cmdline 2>/dev/null) || continue; case $c in *"__shim serve --listen"*) ;; *"__shim serve"*|*"__shim relay"*) n=$((n+1));; esac; done; h=0; for f in ` + holdPrefix + `*; do [ -e "$f" ] && [ "$(stat -c %u "$f")" != 0 ] && h=$((h+1)); done; echo "helpers=$n holds=$h"`
	if err := b.Run(t.Context(), &ops.Cmd{Command: cmd, Output: &out}); err != nil {
		t.Fatalf("counting the helpers: %v", err)
	}
	return strings.TrimSpace(out.String())
}

// TestOverBoundRestores: a reply of the real helper over one of the host's
// bounds (a listing over helper.MaxListReply, a grep line over the bound
// of a search line) fails with a clear error that ends the helper's
// session, and the calls after it are served by a fresh, synchronised
// helper in the same container: an ephemeral container's helper, which
// ends the container when its client is gone, does not end it when the
// backend drops it and goes on.
func TestOverBoundRestores(t *testing.T) {
	for _, image := range []string{"pi-sandbox/busybox", "pi-sandbox/debian"} {
		for _, tg := range engineTargets {
			t.Run(image[strings.LastIndex(image, "/")+1:]+"/"+tg.name, func(t *testing.T) {
				cli := needEngine(t, image)
				b := tg.open(t, cli, image)
				ctx := t.Context()
				ins, err := cli.ContainerInspect(ctx, b.id, client.ContainerInspectOptions{})
				if err != nil {
					t.Fatal(err)
				}
				started := ins.Container.State.StartedAt
				dir := b.Info().WorkDir + "/bound"
				setupOverBound(t, b, dir)
				for round := range 2 {
					for _, ob := range overBound {
						err := ob.call(ctx, b, dir)
						if err == nil {
							t.Fatalf("%s: a reply over the bound was taken", ob.name)
						}
						var le *helper.LimitError
						if !errors.As(err, &le) || !errors.Is(err, ops.ErrTransport) || !strings.HasPrefix(err.Error(), ob.text) {
							t.Fatalf("round %d: %s over the bound: %v; want a *helper.LimitError wrapping ops.ErrTransport that says %q", round, ob.name, err, ob.text)
						}
						data, err := ops.ReadFile(ctx, b, dir+"/small/a.txt")
						if err != nil || string(data) != "hi\n" {
							t.Fatalf("round %d: ReadFile after the %s: %q, %v", round, ob.name, data, err)
						}
						var out bytes.Buffer
						if err := b.Run(ctx, &ops.Cmd{Command: "echo ok", Output: &out}); err != nil || out.String() != "ok\n" {
							t.Fatalf("round %d: Run after the %s: %q, %v", round, ob.name, out.String(), err)
						}
						des, err := b.ReadDir(ctx, dir+"/small")
						if err != nil || len(des) != 1 || des[0].Name() != "a.txt" {
							t.Fatalf("round %d: ReadDir of a small directory after the %s: %v, %v", round, ob.name, des, err)
						}
					}
				}
				// The dropped helpers have ended (each within some 2.5 s of
				// its stdin's end) and ended nothing else.
				time.Sleep(4 * time.Second)
				// An up sandbox reached through its host socket has no
				// relay process at all (its sessions are the daemon's).
				want := "helpers=1 holds=0"
				if b.hostSock != "" {
					want = "helpers=0 holds=0"
				}
				if got := helpers(t, b); got != want {
					t.Errorf("in the container after the drops: %s, want %s", got, want)
				}
				ins, err = cli.ContainerInspect(ctx, b.id, client.ContainerInspectOptions{})
				if err != nil || !ins.Container.State.Running || ins.Container.State.StartedAt != started {
					t.Fatalf("the container after the drops: %+v, %v; want it running since %s", ins.Container.State, err, started)
				}
			})
		}
	}
}

// TestScriptFailureText: a failed script is described by its exit code
// and its stderr, else its stdout (the engine's message for an exec that
// could not start), never by nothing.
func TestScriptFailureText(t *testing.T) {
	for _, tc := range []struct {
		res  scriptResult
		want string
	}{
		{scriptResult{code: 1, stderr: "mkdir: x: Permission denied\n"}, "exit 1: mkdir: x: Permission denied"},
		{scriptResult{code: 126, stdout: []byte("OCI runtime exec failed: exec failed: cannot exec in a stopped container: unknown\r\n")}, "exit 126: OCI runtime exec failed: exec failed: cannot exec in a stopped container: unknown"},
		{scriptResult{code: 137}, "exit 137: no output"},
	} {
		if got := tc.res.failure(); got != tc.want {
			t.Errorf("failure() = %q, want %q", got, tc.want)
		}
	}
	if got := (&scriptResult{code: 1, stderr: strings.Repeat("x", 1<<20)}).failure(); len(got) > 8<<10 {
		t.Errorf("failure() of %d bytes", len(got))
	}
}

// TestKeepAliveHold: the keep-alive script (an ephemeral container's init
// child) ends on SIGTERM, as when its helper's client is gone, unless a
// hold file of root's whose deadline has not passed spares it: one SIGTERM
// each. Each case has hold files of its own (keepAliveScript's prefix).
func TestKeepAliveHold(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(t, "needs root to make hold files of root's and of another uid")
	}
	if _, err := os.Stat("/bin/sh"); err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	// The script's sleep outlives it: as a subreaper the test reaps it.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	type script struct {
		cmd    *exec.Cmd
		exited chan struct{}
		err    error // cmd.Wait's, once exited is closed
	}
	start := func(t *testing.T, prefix string) *script {
		s := &script{cmd: exec.Command("/bin/sh", "-c", keepAliveScript(prefix)), exited: make(chan struct{})}
		// A group of its own: its sleep is ended with it.
		s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := s.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { s.err = s.cmd.Wait(); close(s.exited) }()
		pid := s.cmd.Process.Pid
		t.Cleanup(func() {
			syscall.Kill(-pid, syscall.SIGKILL)
			<-s.exited
			// Its sleep, orphaned, is this process's child (a subreaper).
			for {
				if _, err := unix.Wait4(-pid, nil, 0, nil); err != unix.EINTR && err != nil {
					break
				}
			}
		})
		// The trap is set once the script waits for its sleep.
		children := fmt.Sprintf("/proc/%d/task/%d/children", pid, pid)
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if b, _ := os.ReadFile(children); len(strings.TrimSpace(string(b))) > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the keep-alive script did not start its sleep")
			}
		}
		return s
	}
	hold := func(t *testing.T, prefix string, deadline time.Time, uid int) {
		p := prefix + strconv.FormatInt(time.Now().UnixNano(), 10)
		if err := os.WriteFile(p, []byte(strconv.FormatInt(deadline.Unix(), 10)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	ended := func(t *testing.T, s *script, want bool) {
		t.Helper()
		select {
		case <-s.exited:
			if !want {
				t.Fatalf("the script ended (%v): the hold did not spare it", s.err)
			}
			if s.err != nil {
				t.Fatalf("the script ended with %v, want exit 0", s.err)
			}
		case <-time.After(time.Second):
			if want {
				t.Fatal("the script did not end on SIGTERM")
			}
		}
	}
	t.Run("held", func(t *testing.T) {
		prefix := filepath.Join(t.TempDir(), "hold.")
		s := start(t, prefix)
		hold(t, prefix, time.Now().Add(time.Minute), 0)
		s.cmd.Process.Signal(syscall.SIGTERM)
		ended(t, s, false)
		s.cmd.Process.Signal(syscall.SIGTERM) // the hold is used up
		ended(t, s, true)
	})
	// Each of these ends on the first SIGTERM; one the sandbox user made
	// (not root's) spares nothing: a hostile sandbox cannot keep its
	// container up once its client is gone.
	for _, c := range []struct {
		name     string
		deadline time.Duration // of the hold file; 0: none
		uid      int
	}{{"none", 0, 0}, {"expired", -time.Minute, 0}, {"not root's", time.Minute, 1000}} {
		t.Run(c.name, func(t *testing.T) {
			prefix := filepath.Join(t.TempDir(), "hold.")
			s := start(t, prefix)
			if c.deadline != 0 {
				hold(t, prefix, time.Now().Add(c.deadline), c.uid)
			}
			s.cmd.Process.Signal(syscall.SIGTERM)
			ended(t, s, true)
		})
	}
}
