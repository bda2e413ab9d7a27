package k8s

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/ops/shim"
)

const noShimLimit = "no shim: a process that calls setsid itself survives a kill"

// shimFile is the host's helper binary for the pod's architecture.
type shimFile struct {
	bins *shim.Binaries // the host's binaries, nil without (NoHelper)
	arch string         // the GOARCH chosen
	host string
	up   *shim.Upload
	sum  string // hex SHA-256
	name string // content-addressed file name in the pod
	err  error  // why there is none
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
	return nil, fmt.Errorf("k8s: %w", err)
}

// choose picks (and hashes) the binary for a pod of goarch (its node's
// architecture). Without one, sf.err says why and so does the error.
func (sf *shimFile) choose(goarch string) error {
	if sf.bins == nil {
		return sf.err
	}
	if sf.up != nil && sf.arch == goarch {
		return nil
	}
	u, err := sf.bins.For(goarch)
	if err != nil {
		sf.arch, sf.host, sf.up, sf.sum, sf.name, sf.err = goarch, "", nil, "", "", errors.New(shim.LimitReason(err))
		sf.full = err
		return fmt.Errorf("k8s: %w", err)
	}
	sf.arch, sf.host, sf.up, sf.sum, sf.name, sf.err = goarch, u.Path, u, u.Sum, u.Name(), nil
	sf.full = nil
	return nil
}

// uploadScript writes stdin to a temp file in $1, checks its size ($4) and
// SHA-256 ($3, where sha256sum exists), then moves it to $1/$2 and checks
// it runs. Exit 3: the upload arrived damaged.
const uploadScript = `
mkdir -p "$1" && t=$(mktemp "$1/.$2.XXXXXXXX") || exit 1
cat > "$t" || { rm -f "$t"; exit 1; }
n=$(($(wc -c < "$t")))
if [ "$n" != "$4" ]; then rm -f "$t"; echo "size $n, want $4" >&2; exit 3; fi
if command -v sha256sum >/dev/null 2>&1; then
  s=$(sha256sum "$t"); s=${s%% *}
  if [ "$s" != "$3" ]; then rm -f "$t"; echo "sha256 $s, want $3" >&2; exit 3; fi
fi
chmod 755 "$t" && mv -f "$t" "$1/$2" && "$1/$2" __shim version
`

// uploadShim writes the binary through exec stdin into dir and returns its
// path. containerd has open bugs that truncate exec stdin: a damaged
// upload is tried once more.
func (b *Backend) uploadShim(ctx context.Context, dir string) (string, error) {
	sf := b.sf
	if err := sf.up.CheckELF(b.info.Arch); err != nil {
		return "", fmt.Errorf("k8s: %s: %w", sf.host, err)
	}
	var res result
	var err error
	for try := 0; try < 2; try++ {
		r, oerr := sf.up.Open()
		if oerr != nil {
			return "", fmt.Errorf("k8s: upload the shim: %w", oerr)
		}
		res, err = b.t.script(ctx, uploadScript, r, dir, sf.name, sf.sum, strconv.FormatInt(sf.up.Size, 10))
		if cerr := r.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			return "", fmt.Errorf("k8s: upload the shim: %w", err)
		}
		if res.code != 3 {
			break
		}
	}
	if res.code != 0 || !strings.HasPrefix(string(res.stdout), "pi-sandbox-shim ") {
		return "", fmt.Errorf("k8s: upload the shim to %s failed (exit %d): %s", dir, res.code, strings.TrimSpace(string(res.stderr)+string(res.stdout)))
	}
	return dir + "/" + sf.name, nil
}
