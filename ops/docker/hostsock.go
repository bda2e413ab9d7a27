package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"

	"github.com/pi-sandbox/pi-sandbox/ops/shim"
)

// The host socket of an up sandbox (and a pool member): where the engine
// runs on this host and the helper binary is mounted (runc, Podman; not
// gVisor, whose sockets stay inside its kernel), the container gets a
// directory of this host at shim.HostDir, owned by the sandbox user, in
// which its helper daemon listens too. A backend then reaches the daemon
// with a connect on the host instead of the relay's exec, and trusts it
// only when it proves the sandbox's key and is the socket's peer
// (shim.HostDaemon); anything else goes through the relay, which starts or
// replaces the daemon. The directories are under hostSockParent (0700,
// this user's): nobody else on the host reaches a daemon through them.
// The sandbox user can write files there as on its volumes.

// LabelHostSock is the container's host directory (hostSockParent/NAME).
const LabelHostSock = "pi-sandbox.host-sock"

// hostSockParent is the host directory holding the socket directories.
func hostSockParent() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "pi-sandbox", "sock"), nil
}

// hostSockMount makes the host directory of a container about to be
// created with cfg (its user's uid owns it) and returns its mount (whose
// Source is the directory), or nil when the container gets none: the
// helper is not mounted (the engine is elsewhere, gVisor), the user is not
// a number, or this process could not give it the directory.
func hostSockMount(cfg *Config) *mount.Mount {
	if !cfg.helper.mounted {
		return nil
	}
	uid, err := strconv.Atoi(strings.SplitN(cfg.User, ":", 2)[0])
	if err != nil || uid < 0 || !(os.Geteuid() == 0 || uid == os.Geteuid()) {
		return nil
	}
	parent, err := hostSockParent()
	if err != nil {
		return nil
	}
	if err := os.MkdirAll(parent, 0o700); err != nil || os.Chmod(parent, 0o700) != nil {
		return nil
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	name := hex.EncodeToString(rnd[:])
	dir := filepath.Join(parent, name)
	if len(filepath.Join(dir, shim.HostSocket)) > 107 {
		return nil
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil
	}
	if uid != os.Geteuid() {
		if err := os.Chown(dir, uid, -1); err != nil {
			os.Remove(dir)
			return nil
		}
	}
	return &mount.Mount{Type: mount.TypeBind, Source: dir, Target: shim.HostDir}
}

// removeHostSock removes dir (a container's LabelHostSock) and what is in
// it, when it is one of ours: NAME (16 hex digits) in a directory "sock"
// of "pi-sandbox".
func removeHostSock(dir string) {
	name := filepath.Base(dir)
	if !filepath.IsAbs(dir) || len(name) != 16 || strings.Trim(name, "0123456789abcdef") != "" ||
		filepath.Base(filepath.Dir(dir)) != "sock" || filepath.Base(filepath.Dir(filepath.Dir(dir))) != "pi-sandbox" {
		return
	}
	os.RemoveAll(dir)
}

// hostSockOf is the host path of the daemon's socket in a container of
// ours (res) and the container's pid namespace, "" without one (or when
// its init is not visible from here).
func hostSockOf(res container.InspectResponse) (sock, pidNS string) {
	if res.State == nil || res.State.Pid <= 0 {
		return "", ""
	}
	for _, m := range res.Mounts {
		if m.Type == mount.TypeBind && m.Destination == shim.HostDir && filepath.IsAbs(m.Source) {
			ns, err := shim.PidNS(res.State.Pid)
			if err != nil {
				return "", ""
			}
			return filepath.Join(m.Source, shim.HostSocket), ns
		}
	}
	return "", ""
}

// dialHostSock connects to the up sandbox's daemon through its host
// socket; ok is false when the relay is to be used instead (no socket, no
// daemon listening, or one that failed a check).
func (b *Backend) dialHostSock(ctx context.Context) (net.Conn, bool) {
	hd, ok := b.hostDaemon()
	if !ok {
		return nil, false
	}
	nc, err := hd.Dial(ctx)
	if err != nil {
		if errors.Is(err, shim.ErrHostForeign) {
			b.mu.Lock()
			b.hostSockErr = err.Error()
			b.mu.Unlock()
		}
		return nil, false
	}
	return nc, true
}

// pruneHostSocks removes the directories under hostSockParent that no
// container names in keep (its LabelHostSock), older than a minute: a
// container being created has its directory before it is listed.
func pruneHostSocks(keep map[string]bool) {
	parent, err := hostSockParent()
	if err != nil {
		return
	}
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	cut := time.Now().Add(-time.Minute)
	for _, e := range ents {
		dir := filepath.Join(parent, e.Name())
		if fi, err := e.Info(); err == nil && !keep[dir] && fi.ModTime().Before(cut) {
			os.RemoveAll(dir)
		}
	}
}

// hostDaemon is the up sandbox's daemon on its host socket; false without
// one.
func (b *Backend) hostDaemon() (shim.HostDaemon, bool) {
	if b.hostSock == "" || b.hostPidNS == "" || b.helperKey == "" || b.sf == nil || b.sf.up == nil {
		return shim.HostDaemon{}, false
	}
	return shim.HostDaemon{Sock: b.hostSock, Key: b.helperKey, Build: b.sf.up.Sum, PidNS: b.hostPidNS}, true
}
