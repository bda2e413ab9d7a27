package shim

import (
	"crypto/hmac"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Timings of the relay.
const (
	// relayLockWait bounds the wait for another relay starting the daemon.
	relayLockWait = 30 * time.Second
	// daemonStartWait bounds the wait for a new daemon to listen.
	daemonStartWait = 10 * time.Second
	// daemonStopWait is how long a daemon of another build gets to end its
	// sessions and background processes before it is killed.
	daemonStopWait = 5 * time.Second
	// preambleWait bounds reading the daemon's first line.
	preambleWait = 10 * time.Second
)

// relayMain is `__shim relay [--stop] DIR`: it connects its stdin and
// stdout to the helper daemon listening in DIR (see serve_daemon.go),
// starting one when none answers — under DIR/lock, so concurrent relays
// start one — or when the one there runs another build (it is stopped
// first: its background processes end). The client on the other end
// speaks to the daemon as to `__shim serve`. When stdin ends the relay
// half-closes the connection (the daemon ends that session: its calls in
// flight are killed, background processes stay) and exits when the daemon
// closes it. --stop stops the daemon (and everything it owns) instead.
func relayMain(args []string, stderr io.Writer) int {
	fl := flag.NewFlagSet("__shim relay", flag.ContinueOnError)
	fl.SetOutput(stderr)
	stop := fl.Bool("stop", false, "stop the daemon in DIR (its sessions and background processes end) and exit")
	keyStdin := fl.Bool("key-stdin", false, "say on stdout whether this process was ever dumpable, then read the sandbox's helper key (or \"-\") as the first line of stdin: the daemon must prove it (one that cannot is replaced)")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if fl.NArg() != 1 {
		fmt.Fprintln(stderr, "pi-sandbox-shim: usage: __shim relay [--stop] DIR")
		return 2
	}
	dir := fl.Arg(0)
	fail := func(err error) int {
		fmt.Fprintf(stderr, "pi-sandbox-shim: relay: %v\n", err)
		return 1
	}
	// Whether this process was dumpable from its exec: read before it
	// makes itself non-dumpable for what remains of its life.
	sealed := sealedSinceExec()
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		fmt.Fprintf(stderr, "pi-sandbox-shim: warning: dumpable: %v\n", err)
	}
	if err := checkDir(dir, !*stop); err != nil {
		return fail(err)
	}
	if *stop {
		if err := stopDaemon(dir); err != nil {
			return fail(err)
		}
		return 0
	}
	var key []byte
	if *keyStdin {
		k, err := relayKey(sealed)
		if err != nil {
			return fail(err)
		}
		key = k
	}
	c, err := connectDaemon(dir, key)
	if err != nil {
		return fail(err)
	}
	go func() {
		io.Copy(c, os.Stdin)
		c.CloseWrite()
	}()
	io.Copy(os.Stdout, c)
	c.Close()
	return 0
}

// preamble is the daemon's first line.
type preamble struct {
	build string
	pid   int
}

// errForeign marks a daemon that could not prove the sandbox's key.
var errForeign = errors.New("the process listening on the helper socket cannot prove the sandbox's helper key")

// dialDaemon connects to the daemon in dir, sends a nonce and reads its
// first line; the line's pid must be the peer's and, with a key, its proof
// must hold (else errForeign, with the peer's pid in the preamble).
func dialDaemon(dir string, key []byte) (*net.UnixConn, preamble, error) {
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: filepath.Join(dir, daemonSocket), Net: "unix"})
	if err != nil {
		return nil, preamble{}, err
	}
	_, peer, err := peerCred(c)
	if err != nil {
		c.Close()
		return nil, preamble{}, err
	}
	if peer == os.Getpid() {
		// gVisor answers SO_PEERCRED with the caller's own credentials:
		// the peer is unknown (the key's proof still holds).
		peer = 0
	}
	var rnd [16]byte
	rand.Read(rnd[:])
	nonce := hex.EncodeToString(rnd[:])
	c.SetDeadline(time.Now().Add(preambleWait))
	if _, err := fmt.Fprintf(c, "%s\n", nonce); err != nil {
		c.Close()
		return nil, preamble{}, fmt.Errorf("the helper daemon: %w", err)
	}
	line, err := readLine(c, 512)
	if err != nil {
		c.Close()
		return nil, preamble{pid: peer}, fmt.Errorf("the helper daemon's first line: %w", err)
	}
	c.SetDeadline(time.Time{})
	f := strings.Fields(line)
	if len(f) != 4 || f[0] != daemonMagic {
		c.Close()
		return nil, preamble{pid: peer}, fmt.Errorf("%w (its first line is %q)", errForeign, line)
	}
	pid, err := strconv.Atoi(f[2])
	if err != nil || pid <= 1 || (peer != 0 && pid != peer) {
		c.Close()
		return nil, preamble{pid: peer}, fmt.Errorf("%w (it says pid %s, the socket's peer is %d)", errForeign, f[2], peer)
	}
	if peer == 0 {
		peer = pid
	}
	if len(key) > 0 && !hmac.Equal([]byte(f[3]), []byte(proof(key, nonce, f[1], pid))) {
		c.Close()
		return nil, preamble{build: f[1], pid: peer}, errForeign
	}
	return c, preamble{build: f[1], pid: pid}, nil
}

// connectDaemon returns a connection to a daemon of this build (proving
// key, when given) in dir, starting one when needed: one of another build,
// or one that cannot prove the key, is stopped first.
func connectDaemon(dir string, key []byte) (*net.UnixConn, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("executable: %w", err)
	}
	build := selfHash(exe)
	if build == "" {
		return nil, errors.New("cannot hash this executable")
	}
	c, pre, err := dialDaemon(dir, key)
	if err == nil && pre.build == build {
		return c, nil
	}
	if c != nil {
		c.Close()
	}
	unlock, err := lockDaemonDir(dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	// Another relay may have started one meanwhile.
	c, pre, err = dialDaemon(dir, key)
	if err == nil && pre.build == build {
		return c, nil
	}
	switch {
	case err == nil:
		c.Close()
		if err := stopPID(pre.pid); err != nil {
			return nil, fmt.Errorf("stop the helper daemon of build %.12s: %w", pre.build, err)
		}
	case errors.Is(err, errForeign) && pre.pid > 0:
		if err := stopPID(pre.pid); err != nil {
			return nil, fmt.Errorf("stop process %d (%v): %w", pre.pid, errForeign, err)
		}
	}
	if err := startDaemon(exe, dir, key); err != nil {
		return nil, err
	}
	c, pre, err = dialDaemon(dir, key)
	if err != nil {
		return nil, fmt.Errorf("the new helper daemon does not answer: %w", err)
	}
	if pre.build != build {
		c.Close()
		return nil, fmt.Errorf("the new helper daemon is build %.12s, want %.12s", pre.build, build)
	}
	return c, nil
}

// stopDaemon stops the daemon in dir, if one answers.
func stopDaemon(dir string) error {
	unlock, err := lockDaemonDir(dir)
	if err != nil {
		return err
	}
	defer unlock()
	c, pre, err := dialDaemon(dir, nil)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil // none
		}
		return err
	}
	c.Close()
	return stopPID(pre.pid)
}

// stopPID asks a daemon to stop and waits until it is gone, killing it
// when it takes too long.
func stopPID(pid int) error {
	if pid <= 1 || pid == os.Getpid() {
		return fmt.Errorf("refusing to stop process %d", pid)
	}
	gone := func(d time.Duration) bool {
		deadline := time.Now().Add(d)
		for {
			if !pidAlive(pid) {
				return true
			}
			if time.Now().After(deadline) {
				return false
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return err
	}
	if gone(daemonStopWait) {
		return nil
	}
	syscall.Kill(pid, syscall.SIGKILL)
	if gone(2 * time.Second) {
		return nil
	}
	return fmt.Errorf("process %d survives SIGKILL", pid)
}

// pidAlive reports whether pid runs (a zombie counts as gone).
func pidAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}

// lockDaemonDir takes dir's lock file, waiting at most relayLockWait.
func lockDaemonDir(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, daemonLock), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	deadline := time.Now().Add(relayLockWait)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startDaemon starts `exe __shim serve --listen dir` in a new session,
// detached from the relay's stdio (its output goes to dir/helper.log), and
// waits until it listens.
func startDaemon(exe, dir string, key []byte) error {
	logf, err := openDaemonLog(dir)
	if err != nil {
		return fmt.Errorf("start the helper daemon: %w", err)
	}
	defer logf.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("start the helper daemon: %w", err)
	}
	defer r.Close()
	cmd := exec.Command(exe, Subcommand, "serve", "--listen", dir, "--ready-fd", "3")
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{w}
	var kw *os.File
	if len(key) > 0 {
		// The key goes through a pipe: never argv or the environment,
		// which other processes of the user can read.
		var kr *os.File
		if kr, kw, err = os.Pipe(); err != nil {
			w.Close()
			return fmt.Errorf("start the helper daemon: %w", err)
		}
		defer kr.Close()
		cmd.ExtraFiles = append(cmd.ExtraFiles, kr)
		cmd.Args = append(cmd.Args, "--key-fd", "4")
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	w.Close()
	if err != nil {
		if kw != nil {
			kw.Close()
		}
		return fmt.Errorf("start the helper daemon: %w", err)
	}
	if kw != nil {
		kw.Write(append(key, '\n'))
		kw.Close()
	}
	// Not waited for: it outlives the relay (re-parented to init).
	cmd.Process.Release()
	msg := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(r, 4096))
		msg <- strings.TrimSpace(string(b))
	}()
	select {
	case m := <-msg:
		if m == "ok" {
			return nil
		}
		if m == "" {
			m = "it exited without a word"
		}
		return fmt.Errorf("the helper daemon did not start: %s", strings.TrimPrefix(m, "error: "))
	case <-time.After(daemonStartWait):
		return fmt.Errorf("the helper daemon did not listen within %s", daemonStartWait)
	}
}

// openDaemonLog opens dir's log for a new daemon: a regular file of this
// user, emptied. Anything else found there is removed and a fresh file
// made (the open never waits: a FIFO without a reader fails it at once
// instead of blocking); what cannot be removed is an error saying so.
func openDaemonLog(dir string) (*os.File, error) {
	name := filepath.Join(dir, daemonLog)
	const flags = os.O_WRONLY | os.O_CREATE | syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_CLOEXEC
	f, err := os.OpenFile(name, flags|os.O_TRUNC, 0o600)
	if err == nil {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			return f, nil
		}
		f.Close()
	}
	if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s is not a regular file this user can write, and it cannot be removed: %w", name, err)
	}
	f, err = os.OpenFile(name, flags|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	return f, nil
}
