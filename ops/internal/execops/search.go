package execops

import (
	"context"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/search"
)

// Grep searches inside the target: through the shim's engine when there is
// one, else rg; without either it returns ops.ErrUnsupported and
// search.Grep walks the files (one listing per directory: slow).
func (o *Ops) Grep(ctx context.Context, q *ops.GrepQuery, fn func(ops.GrepEvent) error) error {
	return search.Remote{Runner: o, ShimPath: o.shim()}.Grep(ctx, q, fn)
}

// Find finds files inside the target: the shim's engine, else fd (fdfind
// on Debian).
func (o *Ops) Find(ctx context.Context, q *ops.FindQuery, fn func(rel string) error) error {
	return search.Remote{Runner: o, ShimPath: o.shim()}.Find(ctx, q, fn)
}
