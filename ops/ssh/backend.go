package sshops

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"

	"github.com/pi-sandbox/pi-sandbox/internal/shquote"
	"github.com/pi-sandbox/pi-sandbox/internal/spillkey"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/helper"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/target"
	"github.com/pi-sandbox/pi-sandbox/ops/shim"
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
	shimUp   *shim.Upload   // its content, checked before each start
	h        *helper.Client // the helper session; nil: SFTP and a session per command
	dispatcher

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
	if err := checkHostShim(cfg); err != nil {
		return nil, err
	}
	d, err := newDialer(cfg)
	if err != nil {
		return nil, err
	}
	b := &Backend{cfg: cfg, owned: true, dialer: d}
	b.initOps()
	b.pool = newPool(d.target.user+"@"+d.target.alias, d.dial, cfg)
	if err := b.probe(ctx); err != nil {
		b.pool.close(true)
		d.close()
		return nil, err
	}
	return b, nil
}

// NewFromClient uses an existing connection, for programs that embed
// pi-sandbox. Only cfg's WorkDir, KeepAlive, MaxSessionsPerConn, ShimBinary
// and NoHelper apply. Sessions beyond what client allows wait for a free
// one: without dial information no more connections are opened, and a
// dropped client is not replaced. Close leaves client open (unless keepalive found it
// dead and closed it).
func NewFromClient(ctx context.Context, client *ssh.Client, cfg Config) (*Backend, error) {
	if client == nil {
		return nil, fmt.Errorf("sshops: nil client")
	}
	cfg.withDefaults()
	if err := checkHostShim(cfg); err != nil {
		return nil, err
	}
	b := &Backend{cfg: cfg}
	b.initOps()
	b.pool = newPool(client.User()+"@"+client.RemoteAddr().String(), nil, cfg)
	b.pool.add(client)
	if err := b.probe(ctx); err != nil {
		b.pool.close(false)
		return nil, err
	}
	return b, nil
}

// checkHostShim fails, before anything is dialed, when the helper binary
// is missing on this machine and NoHelper does not waive it.
func checkHostShim(cfg Config) error {
	if cfg.NoHelper {
		return nil
	}
	if _, err := (&Backend{cfg: cfg}).hostShim(); err != nil {
		return fmt.Errorf("sshops: %w", err)
	}
	return nil
}

// probeScript reports what Info needs in one session and makes (or finds)
// the spill directory, keyed by user@host and the working directory ($2,
// spillkey), so that it outlives the process: disk-backed under the user's
// cache directory, else under $TMPDIR. $1 is the shim's content-addressed
// file name, $4 and $5 its size and SHA-256: when a copy with exactly that
// content is already next to the spill base directory, no upload is needed
// (a copy that differs is uploaded again). Nothing of the copy runs before
// its bytes are checked, and what runs is the checked descriptor
// (shim.PinScript), never the path. $3 "serve": the session goes on as the
// helper when that copy is there (probeServe).
var probeScript = spillkey.Script + shim.PinScript + `h=$HOME
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
d=$(mkdir -p "$c" 2>/dev/null && spill_dir "$c" "$2") ||
d=$(spill_dir "${TMPDIR:-/tmp}" "$2")
printf 'spill=%s\n' "$d"
x=${d%/*/*}/$1
if [ -n "$1" ]; then
pin_shim "$x" "$4" "$5"
case $? in
0) case $(` + shim.PinExe + ` __shim version 2>/dev/null) in "pi-sandbox-shim "*)
printf 'shim=%s\n' "$x"
[ "$3" = serve ] && { echo ` + helper.ServeMarker + `; SHLVL=1; export SHLVL; exec ` + shim.PinExe + ` __shim serve; };;
esac;;
2) echo pin=unchecked;;
esac
fi
[ "$3" = serve ] && echo ` + helper.ProbeDoneMarker + `
true`

func (b *Backend) probe(ctx context.Context) error {
	sh, shimErr := b.hostShim()
	key := spillkey.Key("ssh:"+b.pool.name, b.cfg.WorkDir)
	// Where the helper will serve, the probe's session becomes it: the
	// login shell and its rc files run once for the session's start.
	size, sum := "0", "-"
	if sh.up != nil {
		size, sum = strconv.FormatInt(sh.up.Size, 10), sh.up.Sum
	}
	cmd := "exec /bin/sh -c " + shquote.Quote(probeScript) + " probe " + shquote.Quote(sh.name) + " " + key
	tail := " " + size + " " + sum
	var out []byte
	var open io.ReadWriteCloser // the probe's session gone on as the helper
	if !b.cfg.NoHelper && shimErr == nil && sh.name != "" {
		o, s, err := b.probeServe(ctx, cmd+" serve"+tail)
		if err != nil {
			return fmt.Errorf("sshops: probe: %w", err)
		}
		out = o
		if s != nil {
			open = s
			defer func() {
				if open != nil { // an error before the helper's start
					open.Close()
				}
			}()
		}
	} else {
		var err error
		if out, err = b.runShort(ctx, cmd+" -"+tail); err != nil {
			return fmt.Errorf("sshops: probe: %w", err)
		}
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
		Capabilities: []string{"grep", "find", "linecount", ops.CapSharedLoopback},
		Home:         kv["home"],
		User:         kv["user"],
		UID:          atoiOr(kv["uid"], -1),
		GID:          atoiOr(kv["gid"], -1),
		SpillDir:     kv["spill"],
		// The login picks the user; the owner's uid is what a permission
		// error can tell.
		UserChoice: "--host USER@HOST (the owner of the path: uid UID:GID)",
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
		return fmt.Errorf("sshops: probe: unexpected answer from the remote host (no private spill directory, 0700 and the user's, under ~/.cache/pi-sandbox or $TMPDIR?): %q", out)
	}
	info.WorkDir = info.Home
	if b.cfg.WorkDir != "" {
		info.WorkDir = path.Clean(b.cfg.WorkDir)
	}
	if c := path.Dir(path.Dir(info.SpillDir)); path.Base(c) == "pi-sandbox" { // the cache's, not the $TMPDIR fallback
		info.CheckpointDir = c + "/checkpoints/" + spillkey.Key("", info.WorkDir)
	}
	b.info = info
	start := func() {
		if shimErr == nil && kv["pin"] == "unchecked" {
			shimErr = shim.ErrPinUnchecked
		}
		b.setupShim(ctx, sh, shimErr, kv["shim"])
		b.startHelper(ctx, open)
		open = nil
	}
	serving := open != nil
	if serving {
		// The working directory is checked through the helper: SFTP
		// would pay the login shell again.
		start()
	}
	fi, err := b.Stat(ctx, info.WorkDir)
	if err != nil {
		b.closeHelper()
		return fmt.Errorf("sshops: working directory: %w", err)
	}
	if !fi.IsDir() {
		b.closeHelper()
		return fmt.Errorf("sshops: working directory: %w", ops.PathError("chdir", info.WorkDir, ops.ENOTDIR))
	}
	if !serving {
		start()
	}
	return nil
}

// Info describes the remote host as probed at open.
func (b *Backend) Info() ops.Info {
	i := b.info
	i.Capabilities = append([]string(nil), b.info.Capabilities...)
	i.Limits = append([]string(nil), b.info.Limits...)
	return i
}

// Close closes the connections New opened; the spill directory stays for
// later sandboxes on the same host and working directory (spillkey). It is
// safe to call twice.
func (b *Backend) Close() error {
	b.closeOnce.Do(func() {
		if b.h != nil {
			b.h.Close()
		}
		b.pool.close(b.owned)
		if b.dialer != nil {
			b.dialer.close()
		}
	})
	return b.closeErr
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
