package shim

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// HostDir is where a container whose engine runs on the client's host has
// a directory of that host bind-mounted (owned by the sandbox user, mode
// 0700): the helper daemon listens there too (HostSocket), so a client on
// the host reaches it with a connect instead of an exec. Such a client
// trusts only a daemon that proves the sandbox's helper key and whose pid
// is the socket peer's (HostDaemon.Dial).
const HostDir = "/run/pi-sandbox-host"

// HostDirEnv, in the daemon's environment, names another directory than
// HostDir (for tests outside a container).
const HostDirEnv = "PI_SANDBOX_HOST_DIR"

// HostSocket is the socket's name in HostDir (and in its host directory).
const HostSocket = daemonSocket

// listenHost listens in dir when it is there (a missing dir is no error):
// a stale socket of an earlier daemon is replaced. The socket is not
// removed when the daemon ends (another daemon may have taken its name by
// then); a client finds it refused and goes through the relay.
func (d *daemon) listenHost(dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := checkDir(dir, false); err != nil {
		return err
	}
	sock := filepath.Join(dir, HostSocket)
	if err := os.Remove(sock); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return err
	}
	ln.SetUnlinkOnClose(false)
	d.mu.Lock()
	d.hostLn = ln
	d.mu.Unlock()
	return nil
}

// ErrHostForeign marks a socket whose peer is not the sandbox's helper
// daemon of the expected build (HostDaemon).
var ErrHostForeign = errors.New("the helper socket's peer is not the sandbox's helper daemon")

// HostDaemon is a helper daemon's socket on the host (a HostSocket in a
// host directory mounted at HostDir) and what its peer must be.
type HostDaemon struct {
	Sock  string // the socket's path on this host
	Key   string // the sandbox's helper key, which the daemon proves
	Build string // the hex SHA-256 of the daemon's binary
	// PidNS is the container's pid namespace (PidNS of its init): a peer
	// in another one is not sent a byte (the sandbox user may have made
	// the socket's name a link to another socket of this host).
	PidNS string
}

// PidNS is the pid namespace of process pid of this host ("pid:[N]").
func PidNS(pid int) (string, error) {
	return os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/pid")
}

// Dial connects to the daemon: it must be in h.PidNS, run h.Build (the
// hex SHA-256 of its binary, or the prefix of it in the binary's name),
// answer the nonce with the proof of h.Key, and be the socket's peer —
// its pid in the container's namespace (its line) is the last NSpid of
// the peer's host pid. What the connection then carries is one helper
// session, as on the relay's stdio. Refused or missing sockets (no
// daemon) and a peer that fails a check are errors: the caller goes
// through the relay, which starts or replaces the daemon.
func (h HostDaemon) Dial(ctx context.Context) (net.Conn, error) {
	c, _, rest, err := h.dial(ctx, "")
	if err != nil {
		return nil, err
	}
	return withRest(c, rest), nil
}

// RawError is the daemon's refusal of a raw connection's operation (a
// port nothing listens on, an egress connection gone): not a transport
// failure.
type RawError struct{ Msg string }

func (e *RawError) Error() string { return e.Msg }

// DialRaw is Dial for a raw connection (daemon_raw.go): op is
// "dial PORT" or "egress LISTENER CONN"; the connection returned carries
// the target connection's bytes, and its CloseWrite half-closes it. The
// daemon's refusal is a *RawError.
func (h HostDaemon) DialRaw(ctx context.Context, op string) (net.Conn, error) {
	c, lines, rest, err := h.dial(ctx, op)
	if err != nil {
		return nil, err
	}
	switch line := lines[1]; {
	case line == "ok":
		return withRest(c, rest), nil
	case strings.HasPrefix(line, "error: "):
		c.Close()
		return nil, &RawError{Msg: strings.TrimPrefix(line, "error: ")}
	default:
		c.Close()
		return nil, fmt.Errorf("shim: host socket %s: the answer to %q is %.80q", h.Sock, op, line)
	}
}

// withRest is c with rest, read already, before what follows.
func withRest(c *net.UnixConn, rest []byte) net.Conn {
	if len(rest) == 0 {
		return c
	}
	return &restConn{UnixConn: c, r: io.MultiReader(bytes.NewReader(rest), c)}
}

// restConn is a connection whose first bytes were read already.
type restConn struct {
	*net.UnixConn
	r io.Reader
}

func (c *restConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// Socket is the connection's socket, for writes the kernel can splice
// into (reads go through Read).
func (c *restConn) Socket() *net.UnixConn { return c.UnixConn }

// readLines reads n lines of at most max bytes each from c, in as few
// reads as it can, and returns them with the bytes read after them.
func readLines(c net.Conn, n, max int) (lines []string, rest []byte, err error) {
	var buf []byte
	tmp := make([]byte, 1024)
	for {
		for len(lines) < n {
			i := bytes.IndexByte(buf, '\n')
			if i < 0 {
				break
			}
			if i > max {
				return nil, nil, errors.New("line too long")
			}
			lines = append(lines, string(buf[:i]))
			buf = buf[i+1:]
		}
		if len(lines) == n {
			return lines, buf, nil
		}
		if len(buf) > max {
			return nil, nil, errors.New("line too long")
		}
		m, err := c.Read(tmp)
		buf = append(buf, tmp[:m]...)
		if err != nil && m == 0 {
			return nil, nil, err
		}
	}
}

// dial connects to the daemon, sends the nonce (and op) and checks the
// daemon's first line; with op it reads the answer's line too. It returns
// the lines and what came after them.
func (h HostDaemon) dial(ctx context.Context, op string) (*net.UnixConn, []string, []byte, error) {
	sock, key, build := h.Sock, h.Key, h.Build
	if key == "" || build == "" || h.PidNS == "" {
		return nil, nil, nil, errors.New("shim: host socket: no key, build or pid namespace to check the daemon by")
	}
	var dl net.Dialer
	nc, err := dl.DialContext(ctx, "unix", sock)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("shim: host socket: %w", err)
	}
	c := nc.(*net.UnixConn)
	fail := func(err error) (*net.UnixConn, []string, []byte, error) {
		c.Close()
		return nil, nil, nil, fmt.Errorf("shim: host socket %s: %w", sock, err)
	}
	_, peer, err := peerCred(c)
	if err != nil {
		return fail(err)
	}
	if ns, err := PidNS(peer); err != nil || ns != h.PidNS {
		return fail(fmt.Errorf("%w: its peer (pid %d here) is not in the container's pid namespace", ErrHostForeign, peer))
	}
	nspid, err := innerPID(peer)
	if err != nil {
		return fail(fmt.Errorf("%w: %v", ErrHostForeign, err))
	}
	var rnd [16]byte
	rand.Read(rnd[:])
	nonce := hex.EncodeToString(rnd[:])
	deadline := time.Now().Add(preambleWait)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	first, want := nonce, 1
	if op != "" {
		// The answer's line comes after a dial in the target.
		first, want = nonce+" "+op, 2
		deadline = deadline.Add(rawDialWait)
	}
	c.SetDeadline(deadline)
	if _, err := fmt.Fprintf(c, "%s\n", first); err != nil {
		return fail(err)
	}
	lines, rest, err := readLines(c, want, 512)
	if err != nil {
		return fail(fmt.Errorf("its first line: %w", err))
	}
	c.SetDeadline(time.Time{})
	line := lines[0]
	f := strings.Fields(line)
	if len(f) != 4 || f[0] != daemonMagic {
		return fail(fmt.Errorf("%w (its first line is %.80q)", ErrHostForeign, line))
	}
	// A daemon that cannot read its own binary (execute-only) knows its
	// build by its content-addressed name: Upload.Name's prefix.
	if f[1] != build && (len(f[1]) != 16 || !strings.HasPrefix(build, f[1])) {
		return fail(fmt.Errorf("%w: it runs build %.12s, not %.12s", ErrHostForeign, f[1], build))
	}
	pid, err := strconv.Atoi(f[2])
	if err != nil || pid != nspid {
		return fail(fmt.Errorf("%w: it says pid %.20s, the peer is pid %d in the container", ErrHostForeign, f[2], nspid))
	}
	if !hmac.Equal([]byte(f[3]), []byte(proof([]byte(key), nonce, f[1], pid))) {
		return fail(fmt.Errorf("%w: no proof of the sandbox's key", ErrHostForeign))
	}
	return c, lines, rest, nil
}

// innerPID is the pid, in its innermost pid namespace, of the process
// whose pid in this one is pid (/proc/PID/status, NSpid's last field).
func innerPID(pid int) (int, error) {
	if pid <= 0 {
		return 0, errors.New("the peer's pid is not visible here")
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "NSpid:"); ok {
			f := strings.Fields(v)
			if len(f) == 0 {
				break
			}
			return strconv.Atoi(f[len(f)-1])
		}
	}
	return 0, fmt.Errorf("no NSpid for pid %d", pid)
}
