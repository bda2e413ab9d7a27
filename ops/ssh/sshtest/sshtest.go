// Package sshtest starts a real OpenSSH sshd for tests: on 127.0.0.1, on a
// free port, with a generated configuration, host key, client key and
// known_hosts file in a temporary directory. It logs in as the user running
// the test (root in CI, which the configuration permits).
//
// When sshd is not installed the test is skipped with the reason, except
// when CI=true, where it fails: CI must install openssh-server.
package sshtest

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
	sshops "github.com/pi-sandbox/pi-sandbox/ops/ssh"
)

// Server is a running sshd.
type Server struct {
	Host           string // 127.0.0.1
	Port           int
	User           string
	Dir            string // the temporary directory holding everything
	IdentityFile   string // the client's private key
	KnownHostsFile string // records the host key for [Host]:Port
	Extra          string // extra sshd_config lines
	// Home is the login user's home directory on the server.
	Home string
	// HostKey is the server's public host key.
	HostKey ssh.PublicKey
	// Dedicated is true when the server logs in as a user created for the
	// test (see Options.CurrentUser).
	Dedicated bool
	authKeys  string

	t    testing.TB
	bin  string
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	log  *logBuffer
}

// SSHDPath returns the sshd binary, or "" when it is not installed.
func SSHDPath() string {
	for _, p := range []string{"/usr/sbin/sshd", "/usr/local/sbin/sshd"} {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	if p, err := exec.LookPath("sshd"); err == nil {
		return p
	}
	return ""
}

// Require skips t (fails it under CI=true) when sshd is missing.
func Require(t testing.TB) string {
	t.Helper()
	p := SSHDPath()
	if p == "" {
		testenv.SkipOrFail(t, "sshd not installed (apt-get install openssh-server)")
	}
	return p
}

// Options adjust Start.
type Options struct {
	// CurrentUser logs in as the user running the test even when that is
	// root. By default a root test creates a throwaway user with a clean
	// home (useradd), because root's rc files on a developer machine or CI
	// image can be slow (pyenv, nvm) and sshd runs every command through
	// them; the user and its home are deleted at cleanup.
	CurrentUser bool
	// Extra lines for sshd_config.
	Extra []string
	// BashRC, when set, is written to the throwaway user's ~/.bashrc (bash
	// sources it for every command sshd runs), e.g. "sleep 0.3" to measure
	// what a slow rc file costs per command.
	BashRC string
}

// Start starts sshd with default Options and stops it when the test ends.
func Start(t testing.TB) *Server { return StartWith(t, Options{}) }

// StartWith starts sshd and stops it when the test ends.
func StartWith(t testing.TB, o Options) *Server {
	t.Helper()
	bin := Require(t)
	u, err := user.Current()
	if err != nil {
		t.Fatalf("sshtest: current user: %v", err)
	}
	s := &Server{Host: "127.0.0.1", User: u.Username, Home: u.HomeDir, Dir: t.TempDir(), Extra: strings.Join(o.Extra, "\n"), t: t, bin: bin}
	s.authKeys = filepath.Join(s.Dir, "authorized_keys")
	if os.Geteuid() == 0 {
		// sshd running as root needs its privilege separation directory.
		os.MkdirAll("/run/sshd", 0o755)
		if !o.CurrentUser {
			s.createUser()
		}
		if s.Dedicated && o.BashRC != "" {
			rc := filepath.Join(s.Home, ".bashrc")
			if err := os.WriteFile(rc, []byte(o.BashRC+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			chownUser(t, rc, s.User)
		}
	}
	hostPub := s.writeKeys()
	s.HostKey = hostPub
	var lastErr error
	for range 5 {
		s.Port = freePort(t)
		if lastErr = s.start(); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		t.Fatalf("sshtest: %v", lastErr)
	}
	line := knownhosts.Line([]string{knownhosts.Normalize(s.Addr())}, hostPub)
	s.KnownHostsFile = filepath.Join(s.Dir, "known_hosts")
	if err := os.WriteFile(s.KnownHostsFile, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("sshd log:\n%s", s.log.String())
		}
	})
	return s
}

// KnownHostsFor writes a known_hosts file recording the host key for addr
// (a proxy in front of the server, say) and returns its path.
func (s *Server) KnownHostsFor(t testing.TB, addr string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "known_hosts")
	line := knownhosts.Line([]string{knownhosts.Normalize(addr)}, s.HostKey)
	if err := os.WriteFile(f, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// Addr is host:port.
func (s *Server) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// Config is an sshops.Config for this server (no ssh config file read).
func (s *Server) Config() sshops.Config {
	return sshops.Config{
		Host:           s.Host,
		Port:           s.Port,
		User:           s.User,
		IdentityFiles:  []string{s.IdentityFile},
		NoAgent:        true,
		KnownHostsFile: s.KnownHostsFile,
		SSHConfigFile:  "none",
	}
}

func (s *Server) writeKeys() ssh.PublicKey {
	t := s.t
	write := func(name string, priv ed25519.PrivateKey) ssh.PublicKey {
		blk, err := ssh.MarshalPrivateKey(priv, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(s.Dir, name), pem.EncodeToMemory(blk), 0o600); err != nil {
			t.Fatal(err)
		}
		pub, err := ssh.NewPublicKey(priv.Public())
		if err != nil {
			t.Fatal(err)
		}
		return pub
	}
	_, hk, _ := ed25519.GenerateKey(rand.Reader)
	_, ck, _ := ed25519.GenerateKey(rand.Reader)
	hostPub := write("host_ed25519", hk)
	clientPub := write("id_ed25519", ck)
	s.IdentityFile = filepath.Join(s.Dir, "id_ed25519")
	if err := os.WriteFile(s.authKeys, ssh.MarshalAuthorizedKey(clientPub), 0o600); err != nil {
		t.Fatal(err)
	}
	if s.Dedicated {
		// sshd reads the file with the user's privileges.
		chownUser(t, s.authKeys, s.User)
	}
	return hostPub
}

func (s *Server) config() string {
	sftp := "internal-sftp"
	for _, p := range []string{"/usr/lib/openssh/sftp-server", "/usr/libexec/sftp-server", "/usr/lib/ssh/sftp-server"} {
		if _, err := os.Stat(p); err == nil {
			sftp = p // the server real hosts use
			break
		}
	}
	return fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
AuthorizedKeysFile %s
PidFile %s
PermitRootLogin yes
StrictModes no
UsePAM no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
AllowAgentForwarding no
AllowTcpForwarding yes
LogLevel INFO
Subsystem sftp %s
%s
`, s.Port, filepath.Join(s.Dir, "host_ed25519"), s.authKeys,
		filepath.Join(s.Dir, "sshd.pid"), sftp, s.Extra)
}

// start launches sshd and waits for its "Server listening" line.
func (s *Server) start() error {
	cfgFile := filepath.Join(s.Dir, "sshd_config")
	if err := os.WriteFile(cfgFile, []byte(s.config()), 0o600); err != nil {
		return err
	}
	cmd := exec.Command(s.bin, "-D", "-e", "-f", cfgFile)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start sshd: %w", err)
	}
	if s.log == nil {
		s.log = &logBuffer{}
	}
	ready := make(chan struct{})
	done := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			s.log.add(line)
			if strings.Contains(line, "Server listening on") {
				once.Do(func() { close(ready) })
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-ready:
	case <-done:
		return fmt.Errorf("sshd exited at start:\n%s", s.log.String())
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		<-done
		return fmt.Errorf("sshd not ready after 15s:\n%s", s.log.String())
	}
	// Listening is logged after bind; confirm with a dial.
	c, err := net.DialTimeout("tcp", s.Addr(), 5*time.Second)
	if err != nil {
		cmd.Process.Kill()
		<-done
		return fmt.Errorf("dial sshd: %w", err)
	}
	c.Close()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	return nil
}

// Stop kills sshd (the listener; sessions already open live on in their
// own sshd processes until their connections close).
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd != nil {
		cmd.Process.Kill()
		<-done
	}
}

// KillConnections kills the per-connection sshd processes (children of the
// listener, by PID), which drops every open connection as a crashed or
// rebooted server would.
func (s *Server) KillConnections() {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	for _, pid := range childPIDs(cmd.Process.Pid) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// Crash kills every sshd process serving a connection — the per-connection
// monitors and their session processes, recursively — leaving the listener
// and the sessions' commands, as a crash of those processes would.
func (s *Server) Crash() {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	var walk func(ppid int)
	walk = func(ppid int) {
		for _, pid := range childPIDs(ppid) {
			if comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); strings.TrimSpace(string(comm)) == "sshd" {
				walk(pid)
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	walk(cmd.Process.Pid)
}

// Restart drops every connection, stops sshd and starts it again on the
// same port and keys.
func (s *Server) Restart() {
	s.t.Helper()
	s.KillConnections()
	s.Stop()
	var err error
	for range 50 {
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond) // the port may linger briefly
	}
	s.t.Fatalf("sshtest: restart: %v", err)
}

// Log returns what sshd logged so far.
func (s *Server) Log() string { return s.log.String() }

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

type logBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (l *logBuffer) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) < 2000 {
		l.lines = append(l.lines, s)
	}
}

func (l *logBuffer) String() string {
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// childPIDs lists the processes whose parent is ppid.
func childPIDs(ppid int) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut at ")".
		st := string(b)
		if i := strings.LastIndexByte(st, ')'); i >= 0 {
			if f := strings.Fields(st[i+1:]); len(f) > 1 && f[1] == strconv.Itoa(ppid) {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// Open opens an ssh backend on s with cfg (s.Config() with changes; an empty
// WorkDir becomes a fresh s.TempDir), failing t with sshd's log when it
// cannot, and closes it when t ends.
func (s *Server) Open(t testing.TB, cfg sshops.Config) *sshops.Backend {
	t.Helper()
	if cfg.WorkDir == "" {
		cfg.WorkDir = s.TempDir(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := sshops.New(ctx, cfg)
	if err != nil {
		t.Fatalf("sshops.New: %v\n%s", err, s.Log())
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// NeedDedicated skips t, or fails it under CI=true, unless the server logs
// in as a user created for the test (root and useradd are needed).
func (s *Server) NeedDedicated(t testing.TB) {
	t.Helper()
	if !s.Dedicated {
		testenv.SkipOrFail(t, "needs a throwaway user (root and useradd)")
	}
}
