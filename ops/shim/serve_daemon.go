package shim

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pi-sandbox/pi-sandbox/ops/internal/native"
)

// The daemon mode of the helper: `__shim serve --listen DIR` serves many
// client sessions in turn (or at once) on the unix socket DIR/helper.sock,
// each like one `__shim serve` on stdio, and owns the background processes
// of all of them until it is stopped (SIGTERM, SIGINT or SIGHUP; the
// container's removal). `__shim relay DIR` (relay.go) connects a client's
// stdio to it, starting it first when it is not there. Never a network
// listener: a socket in a 0700 directory of the sandbox user.

// Names in the daemon's directory.
const (
	daemonSocket = "helper.sock"
	daemonLock   = "lock"
	daemonLog    = "helper.log"
	// daemonMagic starts the line the daemon writes on every connection,
	// after the client's nonce line and before the HTTP/2 stream:
	// "pi-sandbox-helper BUILD PID MAC".
	daemonMagic = "pi-sandbox-helper"
	// daemonLogCap bounds what the daemon writes to its log.
	daemonLogCap = 1 << 20
)

// daemonMain is `__shim serve --listen DIR [--ready-fd N]`: it listens,
// writes "ok" (or "error: WHY") and closes fd N when given, and serves
// until a stop signal; then it ends every session, kills every background
// process group and exits.
func daemonMain(args []string, stderr io.Writer) int {
	fl := flag.NewFlagSet("__shim serve", flag.ContinueOnError)
	fl.SetOutput(stderr)
	dir := fl.String("listen", "", "serve on the unix socket `DIR`/helper.sock (DIR: mode 0700, owned by this user)")
	readyFD := fl.Int("ready-fd", -1, "write \"ok\" or \"error: ...\" to file descriptor `N` once listening, then close it")
	keyFD := fl.Int("key-fd", -1, "read the sandbox's helper key (a hex line) from file descriptor `N`: connections get its proof")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if *dir == "" || fl.NArg() != 0 {
		fmt.Fprintln(stderr, "pi-sandbox-shim: usage: __shim serve --listen DIR [--ready-fd N]")
		return 2
	}
	ready := func(msg string) {
		if *readyFD < 0 {
			return
		}
		f := os.NewFile(uintptr(*readyFD), "ready")
		fmt.Fprintln(f, msg)
		f.Close()
		*readyFD = -1
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "pi-sandbox-shim: serve: %v\n", err)
		ready("error: " + err.Error())
		return 1
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		fmt.Fprintf(stderr, "pi-sandbox-shim: warning: dumpable: %v\n", err)
	}
	log.SetOutput(&cappedWriter{w: stderr, left: daemonLogCap})
	// What a command leaves when it kills its shim is re-parented here,
	// then killed: nothing runs untracked until the sandbox ends.
	if err := native.AdoptOrphans(); err != nil {
		fmt.Fprintf(stderr, "pi-sandbox-shim: warning: %v\n", err)
	}
	var key []byte
	if *keyFD >= 0 {
		f := os.NewFile(uintptr(*keyFD), "key")
		k, err := readLine(f, 256)
		f.Close()
		if err != nil || k == "" {
			return fail(fmt.Errorf("key: %v", err))
		}
		key = []byte(k)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	d, err := listenDaemon(*dir)
	if err != nil {
		return fail(err)
	}
	d.key = key
	// The host's socket directory, when the container has one: a client
	// on the host connects there with no exec (daemon_host.go).
	hostDir := HostDir
	if v := os.Getenv(HostDirEnv); v != "" {
		hostDir = v
	}
	if err := d.listenHost(hostDir); err != nil {
		fmt.Fprintf(stderr, "pi-sandbox-shim: warning: host socket: %v\n", err)
	}
	ready("ok")
	go d.serve(d.ln, false)
	if d.hostLn != nil {
		go d.serve(d.hostLn, true)
	}
	select {
	case <-sigs:
	case <-d.limits.replaced:
	}
	d.shutdown()
	return 0
}

type daemon struct {
	key []byte // the sandbox's helper key; nil: none (the proof is "-")
	ln  *net.UnixListener
	// hostLn listens in HostDir, the host's directory mounted in the
	// container (nil: none); it accepts root's connections too.
	hostLn *net.UnixListener
	reg    *native.Registry
	build  string
	env    []string // the base environment of commands (helperEnv)
	// limits replaces the daemon when a command changed its resource
	// limits (serve_limits.go).
	limits *daemonLimits
	act    *activity // client calls, for the sandbox's idle timeout (lifetime.go)

	mu    sync.Mutex
	conns map[*closingConn]bool
	wg    sync.WaitGroup
}

// listenDaemon checks dir, replaces a stale socket there and listens.
func listenDaemon(dir string) (*daemon, error) {
	if err := checkDir(dir, false); err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("executable: %w", err)
	}
	sock := filepath.Join(dir, daemonSocket)
	// The starter holds the directory's lock: a socket here is stale.
	if err := os.Remove(sock); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return nil, err
	}
	reg, err := native.NewRegistry(0)
	if err != nil {
		ln.Close()
		return nil, err
	}
	d := &daemon{ln: ln, reg: reg, build: selfHash(exe), env: helperEnv(), conns: map[*closingConn]bool{}}
	d.limits = newDaemonLimits(dir, d.closeListeners)
	d.act = newActivity()
	go d.act.run(nil)
	return d, nil
}

// closeListeners stops accepting connections.
func (d *daemon) closeListeners() {
	d.ln.Close()
	d.mu.Lock()
	hl := d.hostLn
	d.mu.Unlock()
	if hl != nil {
		hl.Close()
	}
}

// serve accepts connections of this user on ln until it closes; on the
// host's listener (host), root's too: the host's client.
func (d *daemon) serve(ln *net.UnixListener, host bool) {
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// EMFILE and the like: lowered limits make the daemon useless.
			d.limits.check(0)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if uid, _, err := peerCred(c); err != nil || !(uid == os.Getuid() || host && uid == 0) {
			c.Close()
			continue
		}
		if d.limits.check(0) != "" {
			// Closed without a first line: the relay finds no daemon
			// listening after this one and starts a fresh one.
			c.Close()
			continue
		}
		us := newClosingConn(c)
		d.mu.Lock()
		d.conns[us] = true
		d.wg.Add(1)
		d.mu.Unlock()
		go func() {
			defer d.wg.Done()
			defer func() {
				d.mu.Lock()
				delete(d.conns, us)
				d.mu.Unlock()
			}()
			c.SetReadDeadline(time.Now().Add(preambleWait))
			// The client sends nothing more before the daemon's line.
			lines, rest, err := readLines(c, 1, 256)
			c.SetReadDeadline(time.Time{})
			if err != nil || len(rest) != 0 {
				us.Close()
				return
			}
			line := lines[0]
			// The nonce, and on the host's socket an operation of a raw
			// connection after it (daemon_raw.go).
			nonce, op, _ := strings.Cut(line, " ")
			pid := os.Getpid()
			if _, err := fmt.Fprintf(c, "%s %s %d %s\n", daemonMagic, d.build, pid, proof(d.key, nonce, d.build, pid)); err != nil {
				us.Close()
				return
			}
			if op != "" {
				if host {
					serveRaw(c, op)
				}
				us.Close()
				return
			}
			srv := newServer(d.reg)
			srv.env = d.env
			srv.limits = d.limits
			srv.act = d.act
			serveSession(us, srv)
			us.Close()
		}()
	}
}

// shutdown ends every session (their calls kill their trees), then kills
// every background process group.
func (d *daemon) shutdown() {
	d.closeListeners() // removes the socket in dir
	d.mu.Lock()
	for us := range d.conns {
		us.Close()
	}
	d.mu.Unlock()
	done := make(chan struct{})
	go func() { d.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(exitWait + time.Second):
	}
	d.reg.Close()
}

// peerCred returns the uid and pid of the process at the other end of c.
func peerCred(c *net.UnixConn) (uid, pid int, err error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return -1, 0, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return -1, 0, err
	}
	if cerr != nil {
		return -1, 0, cerr
	}
	return int(cred.Uid), int(cred.Pid), nil
}

// checkDir checks that dir is a directory (not a link) of this user that
// nobody else may enter (mode 0700); with create, it is made when missing.
func checkDir(dir string, create bool) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("%s: not an absolute path", dir)
	}
	if create {
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s: not a directory (%s)", dir, fi.Mode().Type())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s: owned by uid %d, not by this user (%d): refused", dir, st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s: mode %04o, want 0700: refused", dir, fi.Mode().Perm())
	}
	if n := len(filepath.Join(dir, daemonSocket)); n > 107 {
		return fmt.Errorf("%s: too long for a unix socket path (%d bytes)", dir, n)
	}
	return nil
}

// proof is the daemon's answer to a client's nonce: an HMAC-SHA256 under
// the sandbox's helper key of the nonce, the build and the pid (so a
// process relaying another's answer from its own socket fails the peer
// check); "-" without a key.
func proof(key []byte, nonce, build string, pid int) string {
	if len(key) == 0 {
		return "-"
	}
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s|%s|%s|%d", daemonMagic, nonce, build, pid)
	return hex.EncodeToString(m.Sum(nil))
}

// readLine reads one line of at most max bytes, a byte at a time (nothing
// after the newline is consumed).
func readLine(r io.Reader, max int) (string, error) {
	var line []byte
	var b [1]byte
	for len(line) < max {
		if _, err := r.Read(b[:]); err != nil {
			return "", err
		}
		if b[0] == '\n' {
			return string(line), nil
		}
		line = append(line, b[0])
	}
	return "", errors.New("line too long")
}
