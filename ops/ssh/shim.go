package sshops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/pkg/sftp"

	"github.com/pi-sandbox/pi-sandbox/internal/shquote"
	"github.com/pi-sandbox/pi-sandbox/ops/shim"
)

const noShimLimit = "no shim: a process that calls setsid itself survives a kill"

// hostShimBinary is the local shim binary and its content address.
type hostShimBinary struct {
	path string
	name string // "shim-" + the first 16 hex digits of its SHA-256
	up   *shim.Upload
}

// hostShim finds and hashes the binary to upload (once per path and
// version). Without a usable one it fails; with NoHelper the error is the
// short reason Info.Limits give.
func (b *Backend) hostShim() (hostShimBinary, error) {
	p, err := shim.HostBinaryAt(b.cfg.ShimBinary)
	var u *shim.Upload
	if err == nil {
		u, err = shim.ReadUpload(p)
	}
	if err != nil {
		if b.cfg.NoHelper {
			err = errors.New(shim.LimitReason(err))
		}
		return hostShimBinary{}, err
	}
	return hostShimBinary{path: u.Path, name: "shim-" + u.Sum[:16], up: u}, nil
}

// setupShim records the shim the probe found (found, its remote path), or
// uploads it; on any failure commands run under the plain wrapper and
// Info.Limits says why.
func (b *Backend) setupShim(ctx context.Context, h hostShimBinary, hostErr error, found string) {
	p, err := found, hostErr
	if err == nil && found == "" {
		p, err = b.uploadShim(ctx, h)
	}
	if err != nil {
		b.info.Limits = append(b.info.Limits, noShimLimit+" ("+err.Error()+")")
		return
	}
	b.shimPath, b.shimUp = p, h.up
	b.info.Capabilities = append(b.info.Capabilities, "shim")
}

// uploadShim copies the binary by SFTP next to the spill directories (the
// user's cache: disk-backed and, unlike many /tmp mounts, not noexec) under
// its content address, and checks that the bytes arrived and run there.
func (b *Backend) uploadShim(ctx context.Context, h hostShimBinary) (string, error) {
	if b.info.OS != "linux" {
		return "", fmt.Errorf("remote OS is %q", b.info.OS)
	}
	if err := h.up.CheckELF(b.info.Arch); err != nil {
		return "", fmt.Errorf("%s: %w", h.path, err)
	}
	target := path.Join(path.Dir(path.Dir(b.info.SpillDir)), h.name)
	err := b.do(ctx, func(sc *sftp.Client, c *conn) error {
		tmp := target + "." + randHex(4) + ".tmp"
		f, err := sc.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
		if err != nil {
			return b.pathErr("open", tmp, err, c, sc, hintCreate)
		}
		werr := copyUpload(f, h.up)
		if werr == nil {
			werr = f.Chmod(0o755)
		}
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr == nil {
			werr = sc.PosixRename(tmp, target)
		}
		if werr != nil {
			sc.Remove(tmp)
			return b.pathErr("write", target, werr, c, sc, hintCreate)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("upload: %w", err)
	}
	check := shim.PinScript + `pin_shim "$1" "$2" "$3"; s=$?
[ $s = 2 ] && { echo pin=unchecked; exit 1; }
[ $s = 0 ] || { echo "the uploaded file differs"; exit 1; }
exec ` + shim.PinExe + ` __shim version 2>&1`
	out, err := b.runShort(ctx, "exec /bin/sh -c "+shquote.Quote(check)+" check "+h.up.PinArgs(target))
	if strings.Contains(string(out), "pin=unchecked") {
		return "", shim.ErrPinUnchecked
	}
	if err != nil || !strings.Contains(string(out), "pi-sandbox-shim ") {
		return "", fmt.Errorf("%s does not run: %v %s", target, err, bytes.TrimSpace(out))
	}
	return target, nil
}

// copyUpload writes the binary's content to w.
func copyUpload(w io.Writer, u *shim.Upload) error {
	r, err := u.Open()
	if err != nil {
		return err
	}
	_, err = io.Copy(w, r)
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	return err
}
