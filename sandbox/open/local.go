package open

import (
	"context"
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
// Spill files (bash's full output) go to one private directory per user,
// $TMPDIR/pi-sandbox-UID/spill, which outlives the process: a one-shot
// `pi-sandbox tool bash …` prints a path the caller (and the next call) can
// still read. pi never deletes these files either.
func openLocal(ctx context.Context, cfg Config) (ops.Backend, error) {
	spill, err := localSpillDir()
	if err != nil {
		return nil, err
	}
	return local.New(ctx, local.Config{WorkDir: cfg.WorkDir, SpillDir: spill, MaxBackground: cfg.MaxBackground})
}

// localSpillDir creates (or checks) the per-user spill directory. It must be
// a real directory owned by this user with mode 0700, so that another user
// cannot plant a symbolic link or read the output.
func localSpillDir() (string, error) {
	base := filepath.Join(os.TempDir(), fmt.Sprintf("pi-sandbox-%d", os.Getuid()))
	dir := filepath.Join(base, "spill")
	for _, d := range []string{base, dir} {
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
