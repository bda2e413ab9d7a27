package helper_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops/helper"
	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

// The sandbox's helper key reaches only a relay that was never dumpable:
// one exec'd from a binary its user cannot read.

// sealedShim is an execute-only copy of the test binary, named as a
// backend installs the shim, run as uid: the caller's, or nobody's when
// the tests run as root (root reads any file, so its processes are
// dumpable whatever the mode).
type sealedShim struct {
	exe, open string // the execute-only copy; a readable one
	base      string // a 0755 directory for the uid's directories
	uid       int
}

func newSealedShim(t *testing.T) *sealedShim {
	t.Helper()
	base, err := os.MkdirTemp("", "relay-sealed-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(testExe(t))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	s := &sealedShim{exe: filepath.Join(base, "pi-sandbox-shim-"+hex.EncodeToString(sum[:8])), open: filepath.Join(base, "readable"), base: base, uid: os.Geteuid()}
	if s.uid == 0 {
		s.uid = 65534
	}
	for name, mode := range map[string]os.FileMode{s.exe: 0o111, s.open: 0o755} {
		if err := os.WriteFile(name, data, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(name, mode); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// dir makes a directory of the uid, mode 0700.
func (s *sealedShim) dir(t *testing.T, name string) string {
	t.Helper()
	d := filepath.Join(s.base, name)
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(d, s.uid, s.uid); err != nil {
		t.Fatal(err)
	}
	return d
}

// command runs exe (s.exe or s.open) as the uid.
func (s *sealedShim) command(exe string, args ...string) *exec.Cmd {
	cmd := exec.Command(exe, args...)
	cmd.Env = shimEnv()
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() == 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(s.uid), Gid: uint32(s.uid)}
	}
	return cmd
}

// stop stops the daemon in dir (as its uid) when the test ends.
func (s *sealedShim) stopAtCleanup(t *testing.T, dir string) {
	t.Cleanup(func() {
		if out, err := s.command(s.exe, "__shim", "relay", "--stop", dir).CombinedOutput(); err != nil {
			t.Errorf("relay --stop: %v: %s", err, out)
		}
	})
}

// relayProc is a relay child's stdio.
type relayProc struct {
	io.Reader
	in  io.WriteCloser
	cmd *exec.Cmd
}

func (p *relayProc) Write(b []byte) (int, error) { return p.in.Write(b) }
func (p *relayProc) Close() error                { return p.in.Close() }

// userPipe is a pipe owned by the uid, as a container engine makes an
// exec's stdio (the process can reopen it through /proc).
func (s *sealedShim) userPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Chown(s.uid, s.uid); err != nil {
		t.Fatal(err)
	}
	return r, w
}

// startRelay starts `exe __shim relay --key-stdin dir` as the uid.
func (s *sealedShim) startRelay(t *testing.T, exe, dir string) *relayProc {
	t.Helper()
	cmd := s.command(exe, "__shim", "relay", "--key-stdin", dir)
	cmd.Stderr = os.Stderr
	inR, inW := s.userPipe(t)
	outR, outW := s.userPipe(t)
	cmd.Stdin, cmd.Stdout = inR, outW
	err := cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		t.Fatal(err)
	}
	return &relayProc{Reader: outR, in: inW, cmd: cmd}
}

// dial reaches the daemon in dir through a sealed relay proving key.
func (s *sealedShim) dial(t *testing.T, dir, key string) func(context.Context) (io.ReadWriteCloser, error) {
	return func(ctx context.Context) (io.ReadWriteCloser, error) {
		p := s.startRelay(t, s.exe, dir)
		go p.cmd.Wait()
		sealed, err := helper.RelayHello(ctx, p, key)
		if err != nil {
			return nil, err
		}
		if !sealed {
			p.Close()
			return nil, errors.New("the execute-only relay says it is exposed")
		}
		return p, nil
	}
}

// client opens a client of the daemon in dir through sealed relays.
func (s *sealedShim) client(t *testing.T, dir, key string) *helper.Client {
	t.Helper()
	b, err := helper.New(t.Context(), helper.Config{
		Name:  "relay",
		Dial:  s.dial(t, dir, key),
		Hello: proto.Hello{WorkDir: proto.Str(s.base), SpillDir: proto.Str(s.dir(t, fmt.Sprintf("spill-%d", time.Now().UnixNano())))},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// peek is the test binary run as PI_SANDBOX_TEST_PEEK=NAME: it opens NAME
// (another process's /proc/PID/fd/0) as the key's thief does and prints
// "opened" or the error.
func peek(name string) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		fmt.Println(err)
		os.Exit(0)
	}
	f.Close()
	fmt.Println("opened")
	os.Exit(0)
}

// TestRelaySealedStdinClosedToUser: a relay exec'd from a binary its user
// cannot read says it is sealed (non-dumpable since its exec), and another
// process of that user cannot open its stdin (the pipe the key comes
// through) — as it can a shell's; a relay from a readable binary says it
// is exposed (it was dumpable until it could change that) and refuses a
// key.
func TestRelaySealedStdinClosedToUser(t *testing.T) {
	s := newSealedShim(t)
	dir := filepath.Join(s.dir(t, "h"), "helper")
	s.stopAtCleanup(t, dir)
	peekAt := func(pid int) string {
		pk := s.command(s.open)
		pk.Env = append(pk.Env, fmt.Sprintf("PI_SANDBOX_TEST_PEEK=/proc/%d/fd/0", pid))
		out, err := pk.CombinedOutput()
		if err != nil {
			t.Fatalf("peek: %v: %s", err, out)
		}
		return strings.TrimSpace(string(out))
	}

	sh := s.command("/bin/sh", "-c", "read x")
	shR, shIn := s.userPipe(t)
	sh.Stdin = shR
	err := sh.Start()
	shR.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := peekAt(sh.Process.Pid); got != "opened" {
		t.Errorf("another process of the user opening a shell's stdin: %q, want opened", got)
	}
	shIn.Close()
	sh.Wait()

	p := s.startRelay(t, s.exe, dir)
	if line, err := readLineFrom(p); err != nil || line != "pi-sandbox-relay sealed" {
		t.Fatalf("execute-only relay: first line %q, %v", line, err)
	}
	if got := peekAt(p.cmd.Process.Pid); !strings.Contains(got, "permission denied") {
		t.Errorf("another process of the user opening a sealed relay's stdin: %q, want permission denied", got)
	}
	p.Close()
	p.cmd.Process.Kill()
	p.cmd.Wait()

	p = s.startRelay(t, s.open, dir)
	if line, err := readLineFrom(p); err != nil || line != "pi-sandbox-relay exposed" {
		t.Fatalf("readable relay: first line %q, %v", line, err)
	}
	io.WriteString(p, "00112233\n")
	p.Close()
	rest, _ := io.ReadAll(p)
	if err := p.cmd.Wait(); err == nil || len(rest) != 0 {
		t.Errorf("an exposed relay took a key: %v, output %q", err, rest)
	}
}

// readLineFrom reads one line from r within 10 s.
func readLineFrom(r io.Reader) (string, error) {
	type res struct {
		s   string
		err error
	}
	ch := make(chan res, 1)
	go func() {
		var line []byte
		var b [1]byte
		for {
			if _, err := r.Read(b[:]); err != nil {
				ch <- res{string(line), err}
				return
			}
			if b[0] == '\n' {
				ch <- res{string(line), nil}
				return
			}
			line = append(line, b[0])
		}
	}()
	select {
	case r := <-ch:
		return r.s, r.err
	case <-time.After(10 * time.Second):
		return "", errors.New("no line within 10s")
	}
}

// TestRelayExposedGetsNoKey: RelayHello answers a relay that was dumpable
// at its start with no key, and the stream still reaches a daemon.
func TestRelayExposedGetsNoKey(t *testing.T) {
	exe, dir := testExe(t), daemonDir(t)
	c := relayClientDial(t, helper.RelayDial(exe, shimEnv(), dir, "00112233445566778899aabbccddeeff"), 0)
	if s := runOut(t, c, "echo ok"); s != "ok\n" {
		t.Fatalf("output %q", s)
	}
}

// TestRelayKeyReplacesImpostor: with the sandbox's key, a sealed relay
// accepts only a daemon that proves it: a process of the user listening
// on the socket in the daemon's place (after killing it, say) is stopped
// and a real daemon started, as is a daemon started without the key.
func TestRelayKeyReplacesImpostor(t *testing.T) {
	s := newSealedShim(t)
	dir := s.dir(t, "h")
	s.stopAtCleanup(t, dir)
	const key = "00112233445566778899aabbccddeeff"
	imp := s.command(s.open)
	imp.Env = append(imp.Env, "PI_SANDBOX_TEST_IMPOSTOR="+dir)
	out, _ := imp.StdoutPipe()
	if err := imp.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	go func() { imp.Wait(); close(waited) }()
	t.Cleanup(func() { imp.Process.Kill(); <-waited })
	var b [1]byte
	if _, err := out.Read(b[:]); err != nil { // it listens
		t.Fatal(err)
	}
	c := s.client(t, dir, key)
	if c.Hello().PID == imp.Process.Pid {
		t.Fatal("the client reached the impostor")
	}
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("the impostor was not stopped")
	}
	if got := runOut(t, c, "echo real"); got != "real\n" {
		t.Fatalf("output %q", got)
	}
	c.Close()

	// A daemon without the key (started by a keyless relay) is replaced.
	if out, err := s.command(s.exe, "__shim", "relay", "--stop", dir).CombinedOutput(); err != nil {
		t.Fatalf("relay --stop: %v: %s", err, out)
	}
	keyless := s.command(s.exe, "__shim", "relay", dir)
	keyless.Stdin = strings.NewReader("")
	if out, err := keyless.CombinedOutput(); err != nil {
		t.Fatalf("keyless relay: %v: %s", err, out)
	}
	first := daemonPID(t, dir)
	keyed := s.client(t, dir, key)
	if keyed.Hello().PID == first {
		t.Fatal("a keyed client reached a daemon without the key")
	}
	waitDead(t, []int{first}, 5*time.Second)
}

// daemonPID is the pid of the process listening in dir, from its
// preamble.
func daemonPID(t *testing.T, dir string) int {
	t.Helper()
	data, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "helper.sock")
	if !strings.Contains(string(data), sock) {
		t.Fatalf("nothing listens on %s", sock)
	}
	// The listener's pid: the process holding the socket's inode.
	var inode string
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) >= 8 && f[len(f)-1] == sock {
			inode = f[6]
		}
	}
	ents, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, e := range ents {
		if l, err := os.Readlink(e); err == nil && l == "socket:["+inode+"]" {
			var pid int
			fmt.Sscanf(e, "/proc/%d/", &pid)
			return pid
		}
	}
	t.Fatalf("no process holds %s (inode %s)", sock, inode)
	return 0
}
