package sshops_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/pi-sandbox/pi-sandbox/ops"
	sshops "github.com/pi-sandbox/pi-sandbox/ops/ssh"
	"github.com/pi-sandbox/pi-sandbox/ops/ssh/sshtest"
)

// open starts an sshd and opens a backend on it whose working directory is
// a fresh temporary directory.
func open(t *testing.T) *sshops.Backend {
	t.Helper()
	s := sshtest.Start(t)
	return s.Open(t, s.Config())
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestRunBasics(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	info := b.Info()
	if info.Backend != "ssh" || info.OS != "linux" || info.Shell == "" || info.SpillDir == "" {
		t.Fatalf("info: %+v", info)
	}
	var out syncBuf
	err := b.Run(ctx, &ops.Cmd{Command: "echo out; echo err >&2; echo out2; pwd; echo $PAGER $FOO", Env: []string{"FOO=bar baz"}, Output: &out})
	if err != nil {
		t.Fatal(err)
	}
	want := "out\nerr\nout2\n" + info.WorkDir + "\ncat bar baz\n"
	if out.String() != want {
		t.Fatalf("output %q, want %q", out.String(), want)
	}
	err = b.Run(ctx, &ops.Cmd{Command: "exit 3"})
	var ee *ops.ExitError
	if !errors.As(err, &ee) || ee.Code != 3 {
		t.Fatalf("exit 3: %v", err)
	}
	err = b.Run(ctx, &ops.Cmd{Command: "true", Dir: "/nonexistent/dir"})
	var se *ops.StartError
	if !errors.As(err, &se) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing dir: %v", err)
	}
}

func TestRunTimeoutKillsTree(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	marker := path.Join(b.Info().WorkDir, "pids")
	start := time.Now()
	err := b.Run(ctx, &ops.Cmd{
		Command: "sleep 300 & echo $! > " + marker + "; (sleep 301 &) ; echo ready; wait",
		Timeout: 500 * time.Millisecond,
	})
	var te *ops.TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("want timeout, got %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("timeout took %v", d)
	}
	var out syncBuf
	err = b.Run(ctx, &ops.Cmd{Command: alive("$(cat " + marker + ") $(pgrep -u $(id -u) -f 'sleep 30[01]')"), Output: &out})
	if err != nil {
		t.Fatal(err)
	}
	if s := strings.TrimSpace(out.String()); s != "" {
		t.Fatalf("processes survived: %q", s)
	}
}

func TestRunCancel(t *testing.T) {
	b := open(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	pr, pw := newReady()
	go func() { <-pr; cancel(errors.New("user abort")) }()
	err := b.Run(ctx, &ops.Cmd{Command: "echo ready; sleep 300", Output: pw})
	if !errors.Is(err, ops.ErrCanceled) || !strings.Contains(err.Error(), "user abort") {
		t.Fatalf("cancel: %v", err)
	}
}

// newReady returns a writer that closes the channel when "ready" is written.
func newReady() (<-chan struct{}, *readyWriter) {
	w := &readyWriter{ch: make(chan struct{})}
	return w.ch, w
}

type readyWriter struct {
	syncBuf
	once sync.Once
	ch   chan struct{}
}

func (w *readyWriter) Write(p []byte) (int, error) {
	n, err := w.syncBuf.Write(p)
	if strings.Contains(w.String(), "ready") {
		w.once.Do(func() { close(w.ch) })
	}
	return n, err
}

func TestFiles(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	dir := b.Info().WorkDir
	f := path.Join(dir, "a.txt")
	if err := b.WriteFile(ctx, f, []byte("one"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := b.WriteFile(ctx, f, []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ops.ReadFile(ctx, b, f)
	if err != nil || string(got) != "two" {
		t.Fatalf("read %q %v", got, err)
	}
	fi, err := b.Stat(ctx, f)
	if err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode kept? %v %v", fi.Mode(), err)
	}
	// Through a symlink: the target is updated, the link kept.
	os.Symlink(f, path.Join(dir, "link"))
	if err := b.WriteFile(ctx, path.Join(dir, "link"), []byte("three"), 0o600); err != nil {
		t.Fatal(err)
	}
	if fi, _ := b.Lstat(ctx, path.Join(dir, "link")); fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatal("link replaced")
	}
	if got, _ := os.ReadFile(f); string(got) != "three" {
		t.Fatalf("target %q", got)
	}
	checkErr := func(err error, op string, code ops.Errno) {
		t.Helper()
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe.Op != op || ops.ErrnoOf(err) != code {
			t.Fatalf("want %s %s, got %#v", op, code, err)
		}
	}
	_, err = b.Open(ctx, path.Join(dir, "nope"))
	checkErr(err, "open", ops.ENOENT)
	_, err = b.Open(ctx, dir)
	checkErr(err, "read", ops.EISDIR)
	_, err = b.Stat(ctx, path.Join(f, "x"))
	checkErr(err, "stat", ops.ENOTDIR)
	_, err = b.ReadDir(ctx, f)
	checkErr(err, "scandir", ops.ENOTDIR)
	err = b.WriteFile(ctx, dir, []byte("x"), 0o644)
	checkErr(err, "open", ops.EISDIR)
	err = b.WriteFile(ctx, path.Join(dir, "missing", "x"), []byte("x"), 0o644)
	checkErr(err, "open", ops.ENOENT)
	os.Symlink("loop2", path.Join(dir, "loop1"))
	os.Symlink("loop1", path.Join(dir, "loop2"))
	_, err = b.Stat(ctx, path.Join(dir, "loop1"))
	checkErr(err, "stat", ops.ELOOP)

	if err := b.MkdirAll(ctx, path.Join(dir, "d/e/f"), 0o755); err != nil {
		t.Fatal(err)
	}
	checkErr(b.MkdirAll(ctx, path.Join(f, "x"), 0o755), "mkdir", ops.ENOTDIR)
	rp, err := b.RealPath(ctx, path.Join(dir, "link"))
	if err != nil || rp != f {
		t.Fatalf("realpath %q %v", rp, err)
	}
	rp, err = b.RealPath(ctx, path.Join(dir, "d/e/new"))
	if err != nil || rp != path.Join(dir, "d/e/new") {
		t.Fatalf("realpath missing last %q %v", rp, err)
	}
	_, err = b.RealPath(ctx, path.Join(dir, "nod/new"))
	checkErr(err, "realpath", ops.ENOENT)
	ents, err := b.ReadDir(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "a.txt,d,link,loop1,loop2" {
		t.Fatalf("readdir %v", names)
	}
	if err := b.Access(ctx, f, ops.AccessRead|ops.AccessWrite); err != nil {
		t.Fatal(err)
	}
	checkErr(b.Access(ctx, path.Join(dir, "nope"), ops.AccessRead), "access", ops.ENOENT)
	w, err := b.OpenWriter(ctx, path.Join(dir, "spill.log"), os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("abc"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = b.OpenWriter(ctx, path.Join(dir, "spill.log"), os.O_CREATE|os.O_EXCL, 0o600)
	checkErr(err, "open", ops.EEXIST)
	if err := b.Remove(ctx, path.Join(dir, "spill.log")); err != nil {
		t.Fatal(err)
	}
	rmOp := "rm" // SFTP's name; the helper uses the system call's, as local does
	if b.Info().Has("helper") {
		rmOp = "unlink"
	}
	checkErr(b.Remove(ctx, path.Join(dir, "d")), rmOp, ops.ENOTEMPTY)
}

// alive prints those of the pids that are alive and not zombies (a PID 1
// that does not reap leaves killed processes as zombies).
func alive(pids string) string {
	return "for p in " + pids + "; do s=$(sed 's/.*) //' /proc/$p/stat 2>/dev/null | cut -c1); case \"$s\" in Z|X|\"\") ;; *) echo $p;; esac; done"
}

// TestNewFromClient embeds an existing connection: the backend works on it
// and Close leaves it open for its owner.
func TestNewFromClient(t *testing.T) {
	s := sshtest.Start(t)
	key, err := os.ReadFile(s.IdentityFile)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	hk, err := knownhosts.New(s.KnownHostsFile)
	if err != nil {
		t.Fatal(err)
	}
	client, err := ssh.Dial("tcp", s.Addr(), &ssh.ClientConfig{User: s.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: hk})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()
	b, err := sshops.NewFromClient(ctx, client, sshops.Config{WorkDir: s.TempDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	var out syncBuf
	if err := b.Run(ctx, &ops.Cmd{Command: "echo embedded", Output: &out}); err != nil || out.String() != "embedded\n" {
		t.Fatalf("Run: %q %v", out.String(), err)
	}
	f := path.Join(b.Info().WorkDir, "x")
	if err := b.WriteFile(ctx, f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	sess, err := client.NewSession()
	if err != nil {
		t.Fatalf("client closed by Backend.Close: %v", err)
	}
	sess.Close()
}

// TestChattyRC logs in as a user whose ~/.bashrc prints to stdout and
// stderr: the output and the wrapper's reports must not see it.
func TestChattyRC(t *testing.T) {
	s := sshtest.StartWith(t, sshtest.Options{BashRC: "echo rc-noise; echo 'pi-sandbox-ssh: exit 7' >&2; echo exit 5 >&2"})
	s.NeedDedicated(t)
	cfg := s.Config()
	cfg.WorkDir = s.TempDir(t)
	ctx := context.Background()
	b, err := sshops.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var out syncBuf
	if err := b.Run(ctx, &ops.Cmd{Command: "echo clean", Output: &out}); err != nil || out.String() != "clean\n" {
		t.Fatalf("Run = %q, %v", out.String(), err)
	}
}

// TestSFTPServerKilled: the connection lives on but its sftp-server dies;
// the next file call starts another.
func TestSFTPServerKilled(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	f := path.Join(b.Info().WorkDir, "f")
	if err := b.WriteFile(ctx, f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out syncBuf
	if err := b.Run(ctx, &ops.Cmd{Command: "pkill -KILL -u $(id -u) -x sftp-server; echo $?", Output: &out}); err != nil || out.String() != "0\n" {
		t.Fatalf("pkill: %q %v", out.String(), err)
	}
	if got, err := ops.ReadFile(ctx, b, f); err != nil || string(got) != "x" {
		t.Fatalf("read after the SFTP server died: %q %v", got, err)
	}
}

// TestLoginShellOncePerSession: on a host that holds the shim already, a
// session's start runs the login shell (and its rc files) once — the
// probe's session goes on as the helper, and the working directory is
// checked through it — and its commands run it no more.
func TestLoginShellOncePerSession(t *testing.T) {
	s := sshtest.StartWith(t, sshtest.Options{BashRC: `echo run >> "$HOME/rc-runs"`})
	s.NeedDedicated(t)
	cfg := s.Config()
	cfg.WorkDir = s.TempDir(t)
	ctx := context.Background()
	first, err := sshops.New(ctx, cfg) // uploads the shim
	if err != nil {
		t.Fatal(err)
	}
	if !first.Info().Has("helper") {
		t.Fatalf("no helper: %v", first.Info().Limits)
	}
	if err := first.Run(ctx, &ops.Cmd{Command: `rm -f "$HOME/rc-runs"`}); err != nil {
		t.Fatal(err)
	}
	first.Close()
	b, err := sshops.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !b.Info().Has("helper") {
		t.Fatalf("no helper: %v", b.Info().Limits)
	}
	for range 3 {
		if err := b.Run(ctx, &ops.Cmd{Command: "true"}); err != nil {
			t.Fatal(err)
		}
	}
	runs, err := ops.ReadFile(ctx, b, path.Join(b.Info().Home, "rc-runs"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(runs), "run\n"); n != 1 {
		t.Fatalf("the session's start and 3 commands ran ~/.bashrc %d times, want 1", n)
	}
}

// TestEndlessRC logs in as a user whose ~/.bashrc prints without end: the
// session's start fails with the bound it broke, with and without the
// helper, instead of filling the host's memory.
func TestEndlessRC(t *testing.T) {
	s := sshtest.StartWith(t, sshtest.Options{BashRC: "yes rc-noise-rc-noise-rc-noise"})
	s.NeedDedicated(t)
	for _, noHelper := range []bool{false, true} {
		cfg := s.Config()
		cfg.WorkDir = s.TempDir(t)
		cfg.NoHelper = noHelper
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		b, err := sshops.New(ctx, cfg)
		cancel()
		if err == nil {
			b.Close()
			t.Fatalf("NoHelper %v: the backend opened", noHelper)
		}
		if !strings.Contains(err.Error(), "exceeds") {
			t.Fatalf("NoHelper %v: %v", noHelper, err)
		}
	}
}
