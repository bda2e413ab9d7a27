package shellproc

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

func init() { os.Setenv("GODEBUG", "execwait=2") }

// shells returns the POSIX shells on this machine, each as an absolute path
// that accepts -c (busybox through a symlink named sh).
func shells(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, p := range map[string]string{"sh": "/bin/sh", "bash": "/bin/bash", "dash": "/bin/dash"} {
		if _, err := os.Stat(p); err == nil {
			out[name] = p
		}
	}
	if bb, err := exec.LookPath("busybox"); err == nil {
		link := filepath.Join(t.TempDir(), "sh")
		if err := os.Symlink(bb, link); err != nil {
			t.Fatal(err)
		}
		out["busybox"] = link
	}
	if len(out) == 0 {
		t.Skip("no POSIX shell")
	}
	return out
}

type result struct {
	out, stderr string
	code        int
	ctl         Control
}

func run(t *testing.T, shell string, s Spec) result {
	t.Helper()
	if s.PIDFile == "" {
		s.PIDFile = filepath.Join(t.TempDir(), "pid")
	}
	script, err := Script(s)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(shell, "-c", script)
	cmd.Stdin = strings.NewReader("stdin must not reach the command\n")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{out.String(), errb.String(), code, ParseControl(errb.Bytes(), s.Dir)}
}

func TestScript(t *testing.T) {
	for name, sh := range shells(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			t.Run("MergedOrder", func(t *testing.T) {
				r := run(t, sh, Spec{Command: "echo a; echo b >&2; echo c", Shell: sh, Dir: dir})
				if r.out != "a\nb\nc\n" || r.code != 0 {
					t.Fatalf("out %q code %d stderr %q", r.out, r.code, r.stderr)
				}
				for _, l := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
					if !strings.HasPrefix(l, ControlPrefix) {
						t.Errorf("stderr line without control prefix: %q", l)
					}
				}
				if r.ctl.PGID <= 0 || !r.ctl.HaveExit || r.ctl.Exit != 0 || r.ctl.Start != nil || !r.ctl.Done {
					t.Errorf("control %+v", r.ctl)
				}
			})
			t.Run("ExitCode", func(t *testing.T) {
				r := run(t, sh, Spec{Command: "exit 3", Shell: sh})
				if r.code != 3 || r.ctl.Exit != 3 {
					t.Fatalf("code %d ctl %+v", r.code, r.ctl)
				}
			})
			t.Run("Signal", func(t *testing.T) {
				r := run(t, sh, Spec{Command: "kill -9 $$", Shell: sh})
				if r.code != 137 {
					t.Fatalf("code %d", r.code)
				}
			})
			t.Run("Dir", func(t *testing.T) {
				r := run(t, sh, Spec{Command: "pwd", Shell: sh, Dir: dir})
				if strings.TrimSpace(r.out) != dir {
					t.Fatalf("pwd %q, want %q", r.out, dir)
				}
			})
			t.Run("DirMissing", func(t *testing.T) {
				missing := filepath.Join(dir, "nope")
				r := run(t, sh, Spec{Command: "echo ran", Shell: sh, Dir: missing})
				if r.code != StartFailedCode || r.out != "" {
					t.Fatalf("code %d out %q", r.code, r.out)
				}
				pe, ok := errors.AsType[*fs.PathError](r.ctl.Start)
				if !ok || pe.Op != "chdir" || pe.Path != missing || !errors.Is(pe, fs.ErrNotExist) {
					t.Fatalf("start error %#v", r.ctl.Start)
				}
			})
			t.Run("DirNotDir", func(t *testing.T) {
				f := filepath.Join(dir, "file")
				os.WriteFile(f, nil, 0o644)
				r := run(t, sh, Spec{Command: "echo ran", Shell: sh, Dir: f})
				if ops.ErrnoOf(r.ctl.Start) != ops.ENOTDIR || r.out != "" {
					t.Fatalf("start %v out %q", r.ctl.Start, r.out)
				}
			})
			t.Run("ShellMissing", func(t *testing.T) {
				r := run(t, sh, Spec{Command: "echo ran", Shell: "/nonexistent/sh"})
				if r.code != StartFailedCode || r.ctl.Start == nil {
					t.Fatalf("code %d start %v", r.code, r.ctl.Start)
				}
			})
			t.Run("Env", func(t *testing.T) {
				val := "a b'c\"$HOME\n"
				r := run(t, sh, Spec{
					Command: `printf '%s|' "$FOO"; echo "$PATH"`,
					Shell:   sh,
					Env:     []string{"FOO=" + val, "PATH=/nonexistent"},
				})
				if r.out != val+"|/nonexistent\n" || r.code != 0 {
					t.Fatalf("out %q code %d stderr %q", r.out, r.code, r.stderr)
				}
			})
			t.Run("Probe", func(t *testing.T) {
				f := filepath.Join(t.TempDir(), "counter")
				os.WriteFile(f, []byte("a 1\nn 5\n"), 0o644)
				r := run(t, sh, Spec{
					Command: "echo 'n 6' > " + Quote(f),
					Shell:   sh,
					Probe:   `while read k v; do [ "$k" = n ] && pv=$v; done < ` + Quote(f),
				})
				if r.ctl.ProbeBefore != "5" || r.ctl.ProbeAfter != "6" {
					t.Fatalf("probe %q %q, stderr %q", r.ctl.ProbeBefore, r.ctl.ProbeAfter, r.stderr)
				}
			})
			t.Run("StdinClosed", func(t *testing.T) {
				r := run(t, sh, Spec{Command: "cat; echo end", Shell: sh})
				if r.out != "end\n" {
					t.Fatalf("out %q", r.out)
				}
			})
			t.Run("FinalGroupKill", func(t *testing.T) {
				// The background sleep closes its output so nothing waits for
				// it; only the final group kill can end it.
				r := run(t, sh, Spec{Command: "sleep 300 >/dev/null 2>&1 & echo $!", Shell: sh})
				pid, err := strconv.Atoi(strings.TrimSpace(r.out))
				if err != nil {
					t.Fatalf("out %q", r.out)
				}
				waitDead(t, pid)
			})
			t.Run("KillScript", func(t *testing.T) {
				pidFile := filepath.Join(t.TempDir(), "pid")
				testKill(t, sh, pidFile, func(pgid int) string { return KillScript(pidFile, "") })
				if _, err := os.Stat(pidFile); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("pid file left behind: %v", err)
				}
			})
			t.Run("KillGroupScript", func(t *testing.T) {
				testKill(t, sh, filepath.Join(t.TempDir(), "pid"), KillGroupScript)
			})
			t.Run("OutputAfterExit", func(t *testing.T) {
				r := run(t, sh, Spec{Command: "(sleep 0.05; echo late) & echo early", Shell: sh})
				if r.out != "early\nlate\n" || r.code != 0 {
					t.Fatalf("out %q code %d", r.out, r.code)
				}
			})
			t.Run("OrphanHoldsOutput", func(t *testing.T) {
				testOrphan(t, sh)
			})
		})
	}
}

// testKill starts a tree of two sleeps, kills it with the script kill
// returns, and checks the wrapper reports 137 and both sleeps are gone.
func testKill(t *testing.T, sh, pidFile string, kill func(pgid int) string) {
	script, err := Script(Spec{
		Command: "sleep 300 & echo $!; sleep 300 & echo $!; echo ready; wait",
		Shell:   sh, PIDFile: pidFile,
	})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sh, "-c", script)
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pids []int
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && sc.Text() != "ready" {
		n, _ := strconv.Atoi(sc.Text())
		pids = append(pids, n)
	}
	var ctl Control
	er := bufio.NewReader(stderr)
	for ctl.PGID == 0 {
		line, err := er.ReadString('\n')
		if err != nil {
			t.Fatalf("no pgid line: %v", err)
		}
		ctl.ParseLine(strings.TrimSuffix(line, "\n"), "")
	}
	if out, err := exec.Command(sh, "-c", kill(ctl.PGID)).CombinedOutput(); err != nil {
		t.Fatalf("kill script: %v %s", err, out)
	}
	rest, _ := io.ReadAll(er)
	io.Copy(io.Discard, stdout)
	err = cmd.Wait()
	if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 137 {
		t.Errorf("wrapper: %v, want exit 137", err)
	}
	if c := ParseControl(rest, ""); !c.HaveExit || c.Exit != 137 {
		t.Errorf("control after kill %+v", c)
	}
	if len(pids) != 2 {
		t.Fatalf("pids %v", pids)
	}
	for _, p := range pids {
		waitDead(t, p)
	}
}

// testOrphan: the shell exits 3 at once but a background sleep holds the
// output; the wrapper reports the exit on the control channel and keeps
// running until the caller kills the group, then exits 3.
func testOrphan(t *testing.T, sh string) {
	dir := t.TempDir()
	script, err := Script(Spec{Command: "sleep 300 & echo $!; exit 3", Shell: sh, PIDFile: filepath.Join(dir, "pid")})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sh, "-c", script)
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	sc.Scan()
	orphan, _ := strconv.Atoi(sc.Text())
	var ctl Control
	er := bufio.NewReader(stderr)
	for !ctl.HaveExit {
		line, err := er.ReadString('\n')
		if err != nil {
			t.Fatalf("no exit line: %v", err)
		}
		ctl.ParseLine(strings.TrimSuffix(line, "\n"), "")
	}
	if ctl.Exit != 3 {
		t.Fatalf("exit line %d", ctl.Exit)
	}
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(orphan) + "/stat"); err != nil || strings.Contains(string(b), ") Z") {
		t.Fatalf("orphan %d gone before the kill", orphan)
	}
	exec.Command(sh, "-c", KillGroupScript(ctl.PGID)).Run()
	io.Copy(io.Discard, er)
	io.Copy(io.Discard, stdout)
	err = cmd.Wait()
	if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 3 {
		t.Errorf("wrapper: %v, want exit 3", err)
	}
	waitDead(t, orphan)
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("files left: %v", left)
	}
}

// waitDead waits up to 2 s for pid to be gone or a zombie.
func waitDead(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return
		}
		if f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:])); len(f) > 0 && f[0] == "Z" {
			return
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("pid %d still alive", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestQuote(t *testing.T) {
	for _, s := range []string{"", "plain/path-1.txt", "a b", "it's", "$(rm -rf /)", "\n\t", "é"} {
		out, err := exec.Command("/bin/sh", "-c", "printf %s "+Quote(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("Quote(%q) = %s: got %q, %v", s, Quote(s), out, err)
		}
	}
}

func TestScriptRejects(t *testing.T) {
	for _, s := range []Spec{
		{Command: "a\x00b", PIDFile: "/p"},
		{Command: "x", Shell: "sh"},
		{Command: "x", Dir: "rel"},
		{Command: "x", Env: []string{"1A=b"}},
		{Command: "x", Env: []string{"NOEQUALS"}},
		{Command: "x"}, // no PIDFile
	} {
		if _, err := Script(s); err == nil {
			t.Errorf("Script(%+v): no error", s)
		}
	}
}

func TestParseControlForkFailed(t *testing.T) {
	for _, l := range []string{
		"sh: can't fork: Resource temporarily unavailable",
		"/bin/sh: 3: Cannot fork",
		"bash: fork: retry: Resource temporarily unavailable",
		"runtime: failed to create new OS thread (have 2 already; errno=11)",
	} {
		if c := ParseControl([]byte(l+"\n"), "/w"); !c.ForkFailed {
			t.Errorf("%q: ForkFailed not set", l)
		}
	}
	if c := ParseControl([]byte(ControlPrefix+"exit 1\nsome other noise\n"), "/w"); c.ForkFailed {
		t.Error("ForkFailed set without a fork failure")
	}
}

// TestParseControlShimStartEAGAIN: the shim's clone of the shell failing
// with EAGAIN (a pids limit) is the process limit, still naming the shell.
func TestParseControlShimStartEAGAIN(t *testing.T) {
	c := ParseControl([]byte(shimStartPrefix+"exec /bin/sh: EAGAIN\n"), "/w")
	var pe *fs.PathError
	if !errors.Is(c.Start, ops.ErrProcessLimit) || !errors.As(c.Start, &pe) || pe.Path != "/bin/sh" {
		t.Fatalf("Start = %v, want ops.ErrProcessLimit wrapping the shell's *fs.PathError", c.Start)
	}
	c = ParseControl([]byte(shimStartPrefix+"chdir /w/x: ENOENT\n"), "/w")
	if errors.Is(c.Start, ops.ErrProcessLimit) || !errors.Is(c.Start, fs.ErrNotExist) {
		t.Fatalf("Start = %v, want a missing directory", c.Start)
	}
}
