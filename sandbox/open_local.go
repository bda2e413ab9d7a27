package sandbox

import (
	"context"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/local"
)

// openLocal opens the local backend in cfg.WorkDir (default: the current
// directory).
func openLocal(ctx context.Context, cfg Config) (ops.Backend, error) {
	return local.New(ctx, local.Config{WorkDir: cfg.WorkDir})
}
