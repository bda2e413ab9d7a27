package open

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/local"
)

// openLocal opens the local backend in cfg.WorkDir (default: the current
// directory). The sandbox applies the policy's environment (allow-list).
//
// Spill files (bash's full output) go to a private directory keyed by the
// working directory, $TMPDIR/pi-sandbox-UID/spill/HASH, which outlives the
// process: a one-shot `pi-sandbox tool bash …` prints a path the next call on
// the same project can still read, while a sandbox of another working
// directory cannot (only its own spill directory is a root). pi never
// deletes these files either.
func openLocal(ctx context.Context, cfg Config) (ops.Backend, error) {
	wd := cfg.WorkDir
	if wd == "" {
		var err error
		if wd, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("open: working directory: %w", err)
		}
	}
	wd, err := filepath.Abs(wd)
	if err != nil {
		return nil, fmt.Errorf("open: working directory: %w", err)
	}
	if real, err := filepath.EvalSymlinks(wd); err == nil {
		wd = real
	}
	spill, err := localSpillDir(wd)
	if err != nil {
		return nil, err
	}
	return local.New(ctx, local.Config{WorkDir: cfg.WorkDir, SpillDir: spill, MaxBackground: cfg.MaxBackground})
}

// localSpillDir creates (or checks) the spill directory of the sandbox
// whose working directory is wd. Each level must be a real directory owned
// by this user with mode 0700, so that another user cannot plant a symbolic
// link or read the output.
func localSpillDir(wd string) (string, error) {
	base := filepath.Join(os.TempDir(), fmt.Sprintf("pi-sandbox-%d", os.Getuid()))
	sum := sha256.Sum256([]byte(wd))
	spill := filepath.Join(base, "spill")
	dir := filepath.Join(spill, hex.EncodeToString(sum[:8]))
	for _, d := range []string{base, spill, dir} {
		if err := os.Mkdir(d, 0o700); err != nil && !os.IsExist(err) {
			return "", fmt.Errorf("open: spill directory: %w", err)
		}
		fi, err := os.Lstat(d)
		if err != nil {
			return "", fmt.Errorf("open: spill directory: %w", err)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o077 != 0 {
			return "", fmt.Errorf("open: spill directory %s must be a directory owned by uid %d with mode 0700", d, os.Getuid())
		}
	}
	return dir, nil
}
