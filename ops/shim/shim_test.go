package shim_test

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops/shim"
)

func init() { os.Setenv("GODEBUG", "execwait=2") }

func TestMain(m *testing.M) {
	shim.Dispatch()
	os.Exit(m.Run())
}

// shimCmd runs this test binary as the shim.
func shimCmd(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, append([]string{"__shim"}, args...)...)
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	return cmd
}

// deadSoon waits until pid is gone or a zombie.
func deadSoon(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return
		}
		if i := bytes.LastIndexByte(b, ')'); i > 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X') {
			return
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d still alive", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSetsidEscapeeDiesAtExit(t *testing.T) {
	cmd := shimCmd(t, "run", "--", "/bin/sh", "-c", "setsid sleep 300 >/dev/null 2>&1 & echo $!")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("shim: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("output %q", out)
	}
	deadSoon(t, pid)
}

func TestKillRequestKillsSetsidEscapee(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "shim.pid")
	cmd := shimCmd(t, "run", "--pidfile", pidfile, "--", "/bin/sh", "-c", "setsid sleep 300 & echo $!; sleep 300 & echo $!; wait")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	var pids []int
	for len(pids) < 2 && sc.Scan() {
		p, err := strconv.Atoi(sc.Text())
		if err != nil {
			t.Fatalf("line %q", sc.Text())
		}
		pids = append(pids, p)
	}
	if len(pids) != 2 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("got pids %v", pids)
	}
	kill := shimCmd(t, "kill", pidfile)
	if out, err := kill.CombinedOutput(); err != nil {
		t.Errorf("__shim kill: %v: %s", err, out)
	}
	err = cmd.Wait()
	var xe *exec.ExitError
	if !errors.As(err, &xe) {
		t.Errorf("shim exit = %v, want the command's SIGKILL death", err)
	} else if ws := xe.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("shim status %v, want killed by SIGKILL", ws)
	}
	for _, p := range pids {
		deadSoon(t, p)
	}
	if _, err := os.Stat(pidfile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pid file left behind: %v", err)
	}
	// A second request finds no pid file.
	kill = shimCmd(t, "kill", pidfile)
	if err := kill.Run(); !errors.As(err, &xe) || xe.ExitCode() != 2 {
		t.Errorf("__shim kill without a pid file = %v, want exit 2", err)
	}
}

func TestExitStatusAndMergedOutput(t *testing.T) {
	for _, tt := range []struct {
		script string
		out    string
		code   int
		sig    syscall.Signal
	}{
		{"echo out; echo err >&2; exit 4", "out\nerr\n", 4, 0},
		{"echo x; kill -9 $$", "x\n", 137, syscall.SIGKILL},
		{"kill -TERM $$", "", 143, syscall.SIGTERM},
		{"true", "", 0, 0},
	} {
		cmd := shimCmd(t, "run", "--", "/bin/sh", "-c", tt.script)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code, sig := 0, syscall.Signal(0)
		var xe *exec.ExitError
		if errors.As(err, &xe) {
			ws := xe.Sys().(syscall.WaitStatus)
			code = ws.ExitStatus()
			if ws.Signaled() {
				sig = ws.Signal()
				code = 128 + int(sig)
			}
		} else if err != nil {
			t.Fatal(err)
		}
		if stdout.String() != tt.out || code != tt.code || sig != tt.sig {
			t.Errorf("%q: out %q code %d sig %v; want %q %d %v", tt.script, stdout.String(), code, sig, tt.out, tt.code, tt.sig)
		}
		// The "done" line says what the process's own exit then says.
		done := "done exit " + strconv.Itoa(tt.code)
		if tt.sig != 0 {
			done = "done signal " + strconv.Itoa(int(tt.sig))
		}
		if want := "pi-sandbox-shim: exited " + strconv.Itoa(tt.code) + "\npi-sandbox-shim: " + done + "\n"; stderr.String() != want {
			t.Errorf("%q: stderr %q, want %q", tt.script, stderr.String(), want)
		}
	}
}

func TestStartErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--dir", "/nonexistent-dir", "--", "/bin/sh", "-c", "true"}, "pi-sandbox-shim: start: chdir /nonexistent-dir: ENOENT\n"},
		{[]string{"run", "--", "/nonexistent-program"}, "pi-sandbox-shim: start: exec /nonexistent-program: ENOENT\n"},
	} {
		cmd := shimCmd(t, tt.args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var xe *exec.ExitError
		if !errors.As(err, &xe) || xe.ExitCode() != 125 || stderr.String() != tt.want {
			t.Errorf("%v: %v, stderr %q; want exit 125 and %q", tt.args, err, stderr.String(), tt.want)
		}
	}
}

func TestUsageAndVersion(t *testing.T) {
	out, err := shimCmd(t, "version").Output()
	if err != nil || string(out) != "pi-sandbox-shim 1\n" {
		t.Errorf("version = %q, %v", out, err)
	}
	for _, args := range [][]string{{}, {"bogus"}, {"run"}, {"kill"}} {
		err := shimCmd(t, args...).Run()
		var xe *exec.ExitError
		if !errors.As(err, &xe) || xe.ExitCode() != 2 {
			t.Errorf("%v: %v, want exit 2", args, err)
		}
	}
}

func TestOutputAfterExitIsCopied(t *testing.T) {
	out, err := shimCmd(t, "run", "--", "/bin/sh", "-c", "(sleep 0.05; echo late) & echo early").Output()
	if err != nil || string(out) != "early\nlate\n" {
		t.Fatalf("output %q, %v", out, err)
	}
}

func TestReaderGoneKillsTree(t *testing.T) {
	t.Run("Writing", func(t *testing.T) {
		testReaderGone(t, "setsid sleep 300 >/dev/null 2>&1 & echo $!; while :; do echo x; sleep 0.01; done")
	})
	t.Run("Silent", func(t *testing.T) {
		testReaderGone(t, "setsid sleep 300 >/dev/null 2>&1 & echo $!; sleep 300")
	})
}

func testReaderGone(t *testing.T, script string) {
	cmd := shimCmd(t, "run", "--", "/bin/sh", "-c", script)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		t.Fatal("no pid line")
	}
	pid, err := strconv.Atoi(sc.Text())
	if err != nil {
		t.Fatalf("line %q", sc.Text())
	}
	stdout.Close() // the reader goes away
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatal("shim still running after its reader went away")
	}
	deadSoon(t, pid)
}

func TestGrepAndFindModes(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\nneedle two\n"), 0o644)
	out, err := shimCmd(t, "grep", `{"pattern":"needle","path":"`+dir+`"}`).Output()
	if err != nil || !strings.Contains(string(out), `"line":2`) || !strings.Contains(string(out), `"status":"ok"`) {
		t.Errorf("grep: %s, %v", out, err)
	}
	out, err = shimCmd(t, "find", `{"pattern":"*.txt","path":"`+dir+`"}`).Output()
	if err != nil || !strings.Contains(string(out), `"rel":"a.txt"`) {
		t.Errorf("find: %s, %v", out, err)
	}
}

// TestOrphansAreSwept: a double-forked orphan is re-parented to the shim
// (the subreaper) and killed at the end, as is a setsid escapee.
func TestOrphansAreSwept(t *testing.T) {
	out, err := shimCmd(t, "run", "--", "/bin/sh", "-c",
		"(sleep 300 >/dev/null 2>&1 & echo $!); (setsid sleep 300 >/dev/null 2>&1 & echo $!)").Output()
	if err != nil {
		t.Fatalf("shim: %v", err)
	}
	pids := strings.Fields(string(out))
	if len(pids) != 2 {
		t.Fatalf("output %q", out)
	}
	for _, p := range pids {
		pid, _ := strconv.Atoi(p)
		deadSoon(t, pid)
	}
}
