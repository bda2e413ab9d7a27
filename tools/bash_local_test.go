package tools_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops/local"
	"github.com/pi-sandbox/pi-sandbox/tools"
)

// End to end on the local backend: real bash, real pipes, the spill file on
// disk read back through the same backend.

func localBash(t *testing.T) (*local.Backend, loop.Tool) {
	t.Helper()
	b, err := local.New(t.Context(), local.Config{WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, tools.NewBash(b, b, b.Info())
}

func localRun(t *testing.T, tool loop.Tool, ctx context.Context, args map[string]any) (string, *loop.Result, error) {
	t.Helper()
	res, err := tool.Execute(ctx, "e2e", args, nil)
	if err != nil {
		return err.Error(), nil, err
	}
	return res.Content[0].Text, res, nil
}

func TestBashLocalGolden(t *testing.T) {
	_, tool := localBash(t)
	for _, c := range []struct {
		cmd     string
		timeout any
		want    string
		isError bool
		err     bool
	}{
		{cmd: "echo hi", want: "hi\n"},
		{cmd: "true", want: "(no output)"},
		{cmd: "exit 1", want: "(no output)\n\nCommand exited with code 1", isError: true},
		{cmd: "echo out; echo err >&2; exit 3", want: "out\nerr\n\n\nCommand exited with code 3", isError: true},
		{cmd: "echo dying; kill -9 $$", want: "dying\n\n\nCommand exited with code 137", isError: true},
		{cmd: "kill -TERM $$", want: "(no output)\n\nCommand exited with code 143", isError: true},
		{cmd: "printf 'a\\xffb\\xe2\\x82'", want: "a\uFFFDb\uFFFD"},
		{cmd: "echo $PAGER $GIT_PAGER $GIT_TERMINAL_PROMPT $GIT_EDITOR $DEBIAN_FRONTEND", want: "cat cat 0 true noninteractive\n"},
		{cmd: "pwd -P >/dev/null; echo ok", want: "ok\n"},
		// A second leaves a loaded machine time to print before the deadline.
		{cmd: "echo started; sleep 5", timeout: 1, want: "started\n\n\nCommand timed out after 1 seconds", err: true},
		{cmd: "sleep 5", timeout: 0.2, want: "Command timed out after 0.2 seconds", err: true},
	} {
		t.Run(c.cmd, func(t *testing.T) {
			args := map[string]any{"command": c.cmd}
			if c.timeout != nil {
				args["timeout"] = c.timeout
			}
			text, res, err := localRun(t, tool, t.Context(), args)
			if (err != nil) != c.err {
				t.Fatalf("err %v, want error %v", err, c.err)
			}
			if text != c.want {
				t.Errorf("text %q, want %q", text, c.want)
			}
			if res != nil && res.IsError != c.isError {
				t.Errorf("isError %v", res.IsError)
			}
		})
	}
}

func TestBashLocalAbort(t *testing.T) {
	_, tool := localBash(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var once sync.Once
	_, err := tool.Execute(ctx, "e2e", map[string]any{"command": "echo started; sleep 30"}, func(p *loop.Result) {
		// Readiness marker: abort once the command's output arrived.
		if len(p.Content) == 1 && p.Content[0].Text == "started\n" {
			once.Do(cancel)
		}
	})
	if err == nil || err.Error() != "started\n\n\nCommand aborted" {
		t.Fatalf("err %v", err)
	}
}

func TestBashLocalSpill(t *testing.T) {
	b, tool := localBash(t)
	text, res, err := localRun(t, tool, t.Context(), map[string]any{"command": "seq 1 100000; printf 'tail'"})
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`\n\n\[Showing lines 98002-100001 of 100001\. Full output: (/.*/pi-bash-[0-9a-f]{16}\.log)\]$`)
	m := re.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("notice missing: %q", text[max(0, len(text)-200):])
	}
	if path.Dir(m[1]) != b.Info().SpillDir {
		t.Errorf("spill file %s outside the spill directory %s", m[1], b.Info().SpillDir)
	}
	var want strings.Builder
	for i := 1; i <= 100000; i++ {
		want.WriteString(strconv.Itoa(i) + "\n")
	}
	want.WriteString("tail")
	r, err := b.Open(t.Context(), m[1])
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(r)
	r.Close()
	if string(got) != want.String() {
		t.Errorf("spill file: %d bytes, want %d", len(got), want.Len())
	}
	fi, err := b.Stat(t.Context(), m[1])
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("spill file mode %v, %v", fi.Mode(), err)
	}
	if !strings.HasSuffix(res.Content[0].Text, "]") || res.Details == nil {
		t.Error("no details")
	}
}

func TestBashLocalMissingWorkDir(t *testing.T) {
	b, _ := localBash(t)
	info := b.Info()
	info.WorkDir = path.Join(info.WorkDir, "gone")
	tool := tools.NewBash(b, b, info)
	_, _, err := localRun(t, tool, t.Context(), map[string]any{"command": "echo hi"})
	want := "Working directory does not exist: " + info.WorkDir + "\nCannot execute bash commands."
	if err == nil || err.Error() != want {
		t.Fatalf("err %v", err)
	}
}

// TestBashLocalBackgroundWriter: the shell exits at once but a background
// child keeps writing until the timeout kills it. The writer uses builtins
// only (read -t on a FIFO as the pause), so no fork delays it.
func TestBashLocalBackgroundWriter(t *testing.T) {
	_, tool := localBash(t)
	text, res, err := localRun(t, tool, t.Context(), map[string]any{
		"command": "mkfifo p && (exec 3<>p; while :; do echo bg; read -t 0.02 -u 3; done) & exit 4", "timeout": 1.5,
	})
	if err == nil {
		// The writer paused longer than ops.ExitGrace (100 ms): only a
		// heavily loaded machine does that. The fake-runner golden test
		// covers the text; this one needs a machine that keeps up.
		t.Skipf("background writer stalled past the exit grace (result %q, isError %v)", bashTail(text), res.IsError)
	}
	re := regexp.MustCompile(`^(bg\n)+\n\nCommand timed out after 1\.5 seconds\. The shell exited with code 4 after \d+\.\d seconds, but background processes it started kept writing output until the timeout\.$`)
	if !re.MatchString(text) {
		t.Errorf("text %q", bashTail(text))
	}
}

func bashTail(s string) string { return s[max(0, len(s)-200):] }

const bashLocalMemChildEnv = "PI_SANDBOX_BASH_LOCAL_MEM_CHILD"

// TestBashLocalMemoryChild is the child of BenchmarkBashLocal1GiB: 1 GiB
// from a real command through the local backend, spilled to disk.
func TestBashLocalMemoryChild(t *testing.T) {
	if os.Getenv(bashLocalMemChildEnv) != "1" {
		t.Skip("runs only as the child of BenchmarkBashLocal1GiB")
	}
	b, tool := localBash(t)
	start := time.Now()
	text, _, err := localRun(t, tool, t.Context(), map[string]any{"command": "yes 'abcdefghi€' | head -c 1073741824"})
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	m := regexp.MustCompile(`Full output: (\S+)\]$`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no notice: %q", text[max(0, len(text)-200):])
	}
	fi, err := b.Stat(t.Context(), m[1])
	if err != nil || fi.Size() != 1<<30 {
		t.Fatalf("spill file %v, %v", fi, err)
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			fmt.Printf("BASHMEM %s elapsed=%d\n", strings.Join(strings.Fields(l), " "), elapsed.Milliseconds())
		}
	}
}

// BenchmarkBashLocal1GiB: `yes | head -c 1G` through the local backend and
// the bash tool, spill file on disk; reports throughput and the peak RSS of
// the Go process (a child test process, so the figure is the tool's own).
func BenchmarkBashLocal1GiB(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("VmHWM is Linux-only")
	}
	for b.Loop() {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBashLocalMemoryChild$", "-test.count=1", "-test.timeout=5m")
		cmd.Env = append(os.Environ(), bashLocalMemChildEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("child: %v\n%s", err, out)
		}
		m := regexp.MustCompile(`BASHMEM VmHWM: (\d+) kB elapsed=(\d+)`).FindStringSubmatch(string(out))
		if m == nil {
			b.Fatalf("child output:\n%s", out)
		}
		kb, _ := strconv.Atoi(m[1])
		ms, _ := strconv.Atoi(m[2])
		b.ReportMetric(float64(kb)/1024, "peakRSS-MiB")
		b.ReportMetric(1024/(float64(ms)/1000), "MiB/s")
	}
}
