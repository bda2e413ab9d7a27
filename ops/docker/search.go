package docker

import (
	"context"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/search"
)

var (
	_ ops.GrepFS = (*Backend)(nil)
	_ ops.FindFS = (*Backend)(nil)
)

// Grep searches inside the container: through the shim's engine when it
// was uploaded, else rg; without either it returns ops.ErrUnsupported and
// search.Grep walks the files through exec (one per directory: slow).
func (b *Backend) execGrep(ctx context.Context, q *ops.GrepQuery, fn func(ops.GrepEvent) error) error {
	return search.Remote{Runner: b, ShimPath: b.shimPath}.Grep(ctx, q, fn)
}

// Find finds files inside the container: the shim's engine, else fd
// (fdfind on Debian).
func (b *Backend) execFind(ctx context.Context, q *ops.FindQuery, fn func(rel string) error) error {
	return search.Remote{Runner: b, ShimPath: b.shimPath}.Find(ctx, q, fn)
}
