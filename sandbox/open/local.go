package open

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pi-sandbox/pi-sandbox/internal/spillkey"
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
// deletes these files; here files older than a week are removed, and each
// directory keeps its newest 50.
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
	return local.New(ctx, local.Config{WorkDir: cfg.WorkDir, SpillDir: spill, MaxBackground: cfg.MaxBackground, NoHelper: cfg.NoHelper})
}

// localSpillDir creates (or checks) the spill directory of the sandbox
// whose working directory is wd (internal/spillkey: private, keyed, old
// files removed).
func localSpillDir(wd string) (string, error) {
	d, err := spillkey.Local(wd)
	if err != nil {
		return "", fmt.Errorf("open: %w", err)
	}
	return d, nil
}
