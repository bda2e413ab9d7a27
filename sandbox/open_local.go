package sandbox

import (
	"context"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/local"
)

// openLocal opens the local backend in cfg.WorkDir (default: the current
// directory), with the policy's base environment.
func openLocal(ctx context.Context, cfg Config) (ops.Backend, error) {
	return local.New(ctx, local.Config{WorkDir: cfg.WorkDir, Env: cfg.Policy.Env.localBase()})
}
