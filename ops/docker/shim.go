package docker

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/ops/internal/shellproc"
	"github.com/pi-sandbox/pi-sandbox/ops/shim"
)

const noShimLimit = "no shim: a process that calls setsid itself survives a kill"

// shimFile is the host's helper binary for the container's architecture,
// chosen before the probe so the probe can look for an earlier upload (or
// the bind mount) of the same content.
type shimFile struct {
	bins *shim.Binaries // the host's binaries, nil without (NoHelper)
	arch string         // the GOARCH chosen
	host string
	up   *shim.Upload
	name string // content-addressed file name in the container
	err  error  // why there is no shim
	full error  // err in full (which places were looked at), from choose
}

// readShim finds the host's helper binaries. Without a usable one it
// fails, unless NoHelper lets the plain wrapper run commands.
func readShim(cfg *Config) (*shimFile, error) {
	bins, err := shim.FindBinaries(cfg.ShimBinary)
	switch {
	case err == nil:
		return &shimFile{bins: bins}, nil
	case cfg.NoHelper:
		return &shimFile{err: errors.New(shim.LimitReason(err))}, nil
	}
	return nil, fmt.Errorf("docker: %w", err)
}

// choose picks (and hashes) the binary for a container of goarch. Without
// one, sf.err says why and so does the error.
func (sf *shimFile) choose(goarch string) error {
	if sf.bins == nil {
		return sf.err
	}
	if sf.up != nil && sf.arch == goarch {
		return nil
	}
	u, err := sf.bins.For(goarch)
	if err != nil {
		sf.arch, sf.host, sf.up, sf.name, sf.err = goarch, "", nil, "", errors.New(shim.LimitReason(err))
		sf.full = err
		return err
	}
	sf.arch, sf.host, sf.up, sf.name, sf.err = goarch, u.Path, u, u.Name(), nil
	sf.full = nil
	return nil
}

// setupShim records the shim the probe found (found is its path, "" when
// absent) or uploads it, once per container: the path is content
// addressed, next to the sandbox directories, so later sandboxes in the
// same container reuse it. On a failure the plain wrapper runs commands
// and Info.Limits says why — except in a container we created (ours),
// which always runs the helper unless noHelper asks otherwise: there it is
// an error that names the cause.
func (b *Backend) setupShim(ctx context.Context, sf *shimFile, found string, noHelper bool) error {
	p, err := found, sf.err
	if err == nil && p == "" {
		p, err = b.uploadShim(ctx, sf)
	} else if err != nil && sf.full != nil {
		err = sf.full
	}
	if err != nil {
		if b.ours() && !noHelper {
			return b.oursErr(err)
		}
		err = errors.New(shim.LimitReason(err))
		b.info.Limits = append(b.info.Limits, noShimLimit+" ("+err.Error()+")")
		return nil
	}
	b.shimPath = p
	b.info.Capabilities = append(b.info.Capabilities, "shim")
	return nil
}

// ours reports whether pi-sandbox created the container (an ephemeral one,
// an up sandbox, a pool member): it always runs the helper.
func (b *Backend) ours() bool { return b.ephemeral || b.up }

// oursErr is the refusal of a container we created in which the helper
// cannot run.
func (b *Backend) oursErr(err error) error {
	return fmt.Errorf("docker: the helper cannot run in container %.12s, which pi-sandbox created, so the session is refused rather than run on the fallback (--no-helper, Go: NoHelper, asks for it): %w", b.id, err)
}

// uploadShim writes the binary through exec stdin and checks it runs
// there. It uploads as root into a fresh root-owned directory of /tmp
// (sticky, exec-enabled in our profile), so the sandbox user cannot replace
// the binary that later calls trust, and execute-only (0711), so every
// process exec'd from it by the sandbox user is non-dumpable from its
// start (an up sandbox's relay and daemon hold its key); where that fails (no root exec, a
// noexec /tmp), it uploads as the sandbox user next to the sandbox
// directories and Info.Limits says the binary is the user's to change.
func (b *Backend) uploadShim(ctx context.Context, sf *shimFile) (string, error) {
	if err := sf.up.CheckELF(b.info.Arch); err != nil {
		return "", fmt.Errorf("%s: %w", sf.host, err)
	}
	q := shellproc.Quote(sf.name)
	mode := "711"
	if b.readableShim {
		mode = "755"
	}
	root := "d=$(mktemp -d /tmp/pi-sandbox-bin.XXXXXXXX) && chmod 755 \"$d\" && t=\"$d/" + sf.name + ".tmp\" && cat > \"$t\" && chmod " + mode + " \"$t\" && mv -f \"$t\" \"$d\"/" + q + " && \"$d\"/" + q + " __shim version 2>&1 && echo \"path=$d/" + sf.name + "\" || { s=$?; [ -n \"$d\" ] && rm -rf \"$d\"; return $s; }"
	res, err := b.uploadWith(ctx, true, root, sf)
	if err != nil {
		return "", err
	}
	if res.code == 0 && strings.HasPrefix(string(res.stdout), "pi-sandbox-shim ") {
		if _, p, ok := strings.Cut(string(res.stdout), "\npath="); ok {
			return strings.TrimSpace(p), nil
		}
	}
	rootErr := strings.TrimSpace(res.stderr + string(res.stdout))
	target := path.Join(path.Dir(b.stateDir), sf.name)
	tq := shellproc.Quote(target)
	up := "t=$(mktemp " + tq + ".XXXXXXXX) && cat > \"$t\" && chmod 755 \"$t\" && mv -f \"$t\" " + tq + " && " + tq + " __shim version 2>&1 || { s=$?; rm -f \"$t\"; return $s; }"
	res, err = b.uploadWith(ctx, false, up, sf)
	if err != nil {
		return "", err
	}
	if res.code != 0 || !strings.HasPrefix(string(res.stdout), "pi-sandbox-shim ") {
		return "", fmt.Errorf("upload to %s failed (exit %d): %s", target, res.code, strings.TrimSpace(res.stderr+string(res.stdout)))
	}
	b.info.Limits = append(b.info.Limits, "the shim "+target+" belongs to the sandbox user, who can replace it (root could not upload it: "+rootErr+")")
	return target, nil
}

// unsealShim makes a root-installed execute-only shim readable when the
// sandbox user cannot run it: gVisor's loader reads an executable with the
// caller's rights, so an execute-only file fails with EACCES there (and its
// execs are dumpable whatever the mode, so the mode protected nothing). It
// reports whether it changed the mode; later uploads are readable too.
func (b *Backend) unsealShim(ctx context.Context) bool {
	if b.shimPath == "" || !strings.HasPrefix(b.shimPath, "/tmp/pi-sandbox-bin.") {
		return false
	}
	q := shellproc.Quote(b.shimPath)
	res, err := b.script(ctx, q+" __shim version >/dev/null 2>&1", nil)
	if err != nil || res.code != 126 {
		return false
	}
	res, err = b.scriptAs(ctx, true, "chmod 755 "+q, nil)
	if err != nil || res.code != 0 {
		return false
	}
	b.readableShim = true
	b.info.Limits = append(b.info.Limits, readableShimLimit)
	return true
}

// readableShimLimit is the Info.Limits entry of a sandbox whose runtime
// cannot run an execute-only binary.
const readableShimLimit = "the shim binary is readable by the sandbox user: the runtime (gVisor) cannot run an execute-only binary as that user"

// uploadWith runs an upload script with the binary on its stdin.
func (b *Backend) uploadWith(ctx context.Context, root bool, script string, sf *shimFile) (*scriptResult, error) {
	r, err := sf.up.Open()
	if err != nil {
		return nil, err
	}
	res, err := b.scriptAs(ctx, root, script, r)
	if cerr := r.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return res, err
}
