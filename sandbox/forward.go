package sandbox

import (
	"context"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// The wrappers keep ops.ReplaceFS: an edit's read-modify-write stays one
// locked call in the target.
var (
	_ ops.ReplaceFS = (*envBackend)(nil)
	_ ops.ReplaceFS = (*confined)(nil)
)

func (rb *redactBackend) ReplaceFile(ctx context.Context, name string, old, data []byte) error {
	if r, ok := rb.Backend.(ops.ReplaceFS); ok {
		return r.ReplaceFile(ctx, name, old, data)
	}
	return ops.ErrUnsupported
}

func (e *envBackend) ReplaceFile(ctx context.Context, name string, old, data []byte) error {
	if r, ok := e.Backend.(ops.ReplaceFS); ok {
		return r.ReplaceFile(ctx, name, old, data)
	}
	return ops.ErrUnsupported
}

func (c *confined) ReplaceFile(ctx context.Context, name string, old, data []byte) error {
	r, ok := c.b.(ops.ReplaceFS)
	if !ok {
		return ops.ErrUnsupported
	}
	if err := c.check(ctx, name, true, true); err != nil {
		return err
	}
	return r.ReplaceFile(ctx, name, old, data)
}
