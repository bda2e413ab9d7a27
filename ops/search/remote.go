package search

import (
	"context"
	"errors"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// Remote implements the search capabilities of a backend whose files are
// elsewhere (docker, ssh), in this order: the shim's engine
// when ShimPath is set, else the target's rg / fd. When neither can run it
// returns an error wrapping ops.ErrUnsupported, so search.Grep and
// search.Find fall back to the engine over the core file system.
//
// A backend uses it as
//
//	func (b *Backend) Grep(ctx context.Context, q *ops.GrepQuery, fn func(ops.GrepEvent) error) error {
//		return search.Remote{Runner: b, ShimPath: b.shimPath}.Grep(ctx, q, fn)
//	}
type Remote struct {
	Runner   ops.Runner
	ShimPath string // the shim's path in the target; "" when not installed
}

// Grep runs q in the target.
func (r Remote) Grep(ctx context.Context, q *ops.GrepQuery, fn func(ops.GrepEvent) error) error {
	if r.ShimPath != "" {
		started := false
		err := GrepViaShim(ctx, r.Runner, r.ShimPath, q, func(ev ops.GrepEvent) error {
			started = true
			return fn(ev)
		})
		if started || !shimMissing(err) {
			return err
		}
	}
	return GrepWithRG(ctx, r.Runner, q, fn)
}

// Find runs q in the target.
func (r Remote) Find(ctx context.Context, q *ops.FindQuery, fn func(rel string) error) error {
	if r.ShimPath != "" {
		started := false
		err := FindViaShim(ctx, r.Runner, r.ShimPath, q, func(rel string) error {
			started = true
			return fn(rel)
		})
		if started || !shimMissing(err) {
			return err
		}
	}
	return FindWithFD(ctx, r.Runner, q, fn)
}

// shimMissing reports whether err says the shim could not be executed
// (gone from the target, or not executable there): the shell's 126/127.
func shimMissing(err error) bool {
	var ee *ops.ExitError
	var se *ops.StartError
	return (errors.As(err, &ee) && (ee.Code == 126 || ee.Code == 127)) || errors.As(err, &se)
}
