package sshops

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/pkg/sftp"

	"github.com/pi-sandbox/pi-sandbox/ops/shim"
)

const noShimLimit = "no shim: a process that calls setsid itself survives a kill"

// setupShim uploads the shim and records it; on any failure commands run
// under the plain wrapper and Info.Limits says why.
func (b *Backend) setupShim(ctx context.Context) {
	if b.cfg.NoShim {
		b.info.Limits = append(b.info.Limits, noShimLimit+" (disabled)")
		return
	}
	p, err := b.uploadShim(ctx)
	if err != nil {
		b.info.Limits = append(b.info.Limits, noShimLimit+" ("+err.Error()+")")
		return
	}
	b.shimPath = p
	b.info.Capabilities = append(b.info.Capabilities, "shim")
}

func (b *Backend) uploadShim(ctx context.Context) (string, error) {
	host := b.cfg.ShimBinary
	if host == "" {
		var err error
		if host, err = shim.HostBinary(); err != nil {
			return "", err
		}
	}
	if b.info.OS != "linux" {
		return "", fmt.Errorf("remote OS is %q", b.info.OS)
	}
	data, err := os.ReadFile(host)
	if err != nil {
		return "", fmt.Errorf("read shim binary: %w", err)
	}
	if err := checkStaticELF(data, b.info.Arch); err != nil {
		return "", fmt.Errorf("%s: %w", host, err)
	}
	sum := sha256.Sum256(data)
	// Next to the spill directories: the user's cache, disk-backed and
	// (unlike many /tmp mounts) not noexec; the version run proves it.
	target := path.Join(path.Dir(b.info.SpillDir), "shim-"+hex.EncodeToString(sum[:8]))
	err = b.do(ctx, func(sc *sftp.Client, c *conn) error {
		if fi, err := sc.Stat(target); err == nil && fi.Size() == int64(len(data)) && fi.Mode().Perm()&0o100 != 0 {
			return nil
		}
		tmp := target + "." + randHex(4) + ".tmp"
		f, err := sc.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
		if err != nil {
			return b.pathErr("open", tmp, err, c, sc, hintCreate)
		}
		_, werr := f.Write(data)
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
	out, err := b.runShort(ctx, shQuote(target)+" __shim version 2>&1")
	if err != nil || !strings.HasPrefix(string(out), "pi-sandbox-shim ") {
		return "", fmt.Errorf("%s does not run: %v %s", target, err, bytes.TrimSpace(out))
	}
	return target, nil
}

// checkStaticELF checks that data is a statically linked Linux executable
// for goarch.
func checkStaticELF(data []byte, goarch string) error {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("not an ELF executable: %w", err)
	}
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "386": elf.EM_386, "arm": elf.EM_ARM}[goarch]
	if want == 0 || f.Machine != want {
		return fmt.Errorf("built for %s, the remote host is %s", f.Machine, goarch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("dynamically linked (build with CGO_ENABLED=0)")
		}
	}
	return nil
}
