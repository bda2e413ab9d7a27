package sshops

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"

	"github.com/pi-sandbox/pi-sandbox/internal/shquote"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/helper"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/target"
)

// Backend runs tools on a remote host over SSH: files through SFTP, commands
// through exec sessions under a wrapper. It is safe for concurrent use.
type Backend struct {
	cfg    Config
	pool   *pool
	owned  bool // the connections are ours to close
	dialer *dialer
	info   ops.Info
	groups []int // the user's group IDs, for Access
	// shimPath is the uploaded shim on the remote host, "" when commands
	// run under the plain wrapper.
	shimPath string
	h        *helper.Client // the helper session; nil: SFTP and a session per command

	closeOnce sync.Once
	closeErr  error
}

var (
	_ ops.Backend = (*Backend)(nil)
)

// New connects to cfg.Host, probes the remote host and creates the spill
// directory. The zero Config (plus Host) verifies the host key against
// ~/.ssh/known_hosts.
func New(ctx context.Context, cfg Config) (*Backend, error) {
	if cfg.Host == "" {
		return nil, ErrNoHost
	}
	cfg.withDefaults()
	d, err := newDialer(cfg)
	if err != nil {
		return nil, err
	}
	b := &Backend{cfg: cfg, owned: true, dialer: d}
	b.pool = newPool(d.target.user+"@"+d.target.alias, d.dial, cfg)
	if err := b.probe(ctx); err != nil {
		b.pool.close(true)
		d.close()
		return nil, err
	}
	return b, nil
}

// NewFromClient uses an existing connection, for programs that embed
// pi-sandbox. Only cfg's WorkDir, KeepAlive, MaxSessionsPerConn and
// ShimBinary apply. Sessions beyond what client allows wait for a free one:
// without dial information no more connections are opened, and a dropped
// client is not replaced. Close leaves client open (unless keepalive found it
// dead and closed it).
func NewFromClient(ctx context.Context, client *ssh.Client, cfg Config) (*Backend, error) {
	if client == nil {
		return nil, fmt.Errorf("sshops: nil client")
	}
	cfg.withDefaults()
	b := &Backend{cfg: cfg}
	b.pool = newPool(client.User()+"@"+client.RemoteAddr().String(), nil, cfg)
	b.pool.add(client)
	if err := b.probe(ctx); err != nil {
		b.pool.close(false)
		return nil, err
	}
	return b, nil
}

// probeScript reports what Info needs in one session and makes the spill
// directory: disk-backed under the user's cache directory, else under
// $TMPDIR. $1 is the shim's content-addressed file name: when a working copy
// is already next to the spill directories, no upload is needed.
const probeScript = `h=$HOME
echo pi-sandbox-probe
printf 'home=%s\n' "$h"
printf 'pwd=%s\n' "$(pwd)"
printf 'uid=%s\n' "$(id -u)"
printf 'gid=%s\n' "$(id -g)"
printf 'groups=%s\n' "$(id -G)"
printf 'user=%s\n' "$(id -un)"
printf 'uname=%s\n' "$(uname -sm)"
printf 'bash=%s\n' "$(command -v bash)"
printf 'sh=%s\n' "$(command -v sh)"
c=${XDG_CACHE_HOME:-$h/.cache}/pi-sandbox
d=$(mkdir -p "$c" 2>/dev/null && mktemp -d "$c/spill.XXXXXXXX" 2>/dev/null) ||
d=$(mktemp -d "${TMPDIR:-/tmp}/pi-sandbox-spill.XXXXXXXX")
printf 'spill=%s\n' "$d"
x=${d%/*}/$1
if [ -n "$1" ] && [ -x "$x" ] && "$x" __shim version 2>/dev/null | grep -q '^pi-sandbox-shim '; then
printf 'shim=%s\n' "$x"
fi`

func (b *Backend) probe(ctx context.Context) error {
	sh, shimErr := b.hostShim()
	out, err := b.runShort(ctx, "exec /bin/sh -c "+shquote.Quote(probeScript)+" probe "+shquote.Quote(sh.name))
	if err != nil {
		return fmt.Errorf("sshops: probe: %w", err)
	}
	// What the login shell's rc files printed comes before the marker.
	if i := bytes.Index(out, []byte("pi-sandbox-probe\n")); i >= 0 {
		out = out[i:]
	}
	kv := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			kv[k] = v
		}
	}
	info := ops.Info{
		Backend:      "ssh",
		Capabilities: []string{"grep", "find", "linecount"},
		Home:         kv["home"],
		User:         kv["user"],
		UID:          atoiOr(kv["uid"], -1),
		GID:          atoiOr(kv["gid"], -1),
		SpillDir:     kv["spill"],
	}
	for _, g := range strings.Fields(kv["groups"]) {
		if n, err := strconv.Atoi(g); err == nil {
			b.groups = append(b.groups, n)
		}
	}
	info.OS, info.Arch = goOSArch(kv["uname"])
	info.Shell = kv["bash"]
	if info.Shell == "" {
		info.Shell = kv["sh"]
	}
	if info.Shell == "" {
		info.Shell = "/bin/sh"
	}
	if info.Home == "" {
		info.Home = kv["pwd"]
	}
	if !path.IsAbs(info.Home) || !path.IsAbs(info.SpillDir) {
		return fmt.Errorf("sshops: probe: unexpected answer from the remote host: %q", out)
	}
	info.WorkDir = info.Home
	if b.cfg.WorkDir != "" {
		info.WorkDir = path.Clean(b.cfg.WorkDir)
	}
	b.info = info
	fi, err := b.Stat(ctx, info.WorkDir)
	if err != nil {
		b.removeSpill()
		return fmt.Errorf("sshops: working directory: %w", err)
	}
	if !fi.IsDir() {
		b.removeSpill()
		return fmt.Errorf("sshops: working directory: %w", ops.PathError("chdir", info.WorkDir, ops.ENOTDIR))
	}
	b.setupShim(ctx, sh, shimErr, kv["shim"])
	b.startHelper(ctx)
	return nil
}

// Info describes the remote host as probed at open.
func (b *Backend) Info() ops.Info {
	i := b.info
	i.Capabilities = append([]string(nil), b.info.Capabilities...)
	i.Limits = append([]string(nil), b.info.Limits...)
	return i
}

// Close removes the spill directory and closes the connections New opened.
// It is safe to call twice.
func (b *Backend) Close() error {
	b.closeOnce.Do(func() {
		if b.h != nil {
			b.h.Close()
		}
		b.closeErr = b.removeSpill()
		b.pool.close(b.owned)
		if b.dialer != nil {
			b.dialer.close()
		}
	})
	return b.closeErr
}

func (b *Backend) removeSpill() error {
	if b.info.SpillDir == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), killWait)
	defer cancel()
	// SFTP first: it does not start a login shell.
	if err := b.do(ctx, func(sc *sftp.Client, c *conn) error { return sc.RemoveAll(b.info.SpillDir) }); err == nil {
		return nil
	}
	out, err := b.runShort(ctx, "rm -rf -- "+shquote.Quote(b.info.SpillDir))
	if err != nil {
		return fmt.Errorf("sshops: remove spill directory: %w (%s)", err, bytes.TrimSpace(out))
	}
	return nil
}

func goOSArch(uname string) (goos, goarch string) {
	f := strings.Fields(uname)
	if len(f) != 2 {
		return "", ""
	}
	return target.GOOS(f[0]), target.GOARCH(f[1])
}

func atoiOr(s string, d int) int {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	return d
}
