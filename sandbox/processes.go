package sandbox

import (
	"context"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// Processes lists the sandbox's background processes: what commands left
// running after they exited, owned by the sandbox until they end or it
// closes (backends with the "background" capability; on others the list is
// empty, since such processes die with their command). They can be stopped
// with `kill PID` through bash.
func (s *Sandbox) Processes(ctx context.Context) ([]ops.Process, error) {
	if pl, ok := s.backend.(ops.ProcessLister); ok {
		return pl.Processes(ctx)
	}
	return nil, nil
}

// The check-then-use confinement keeps ops.ProcessLister.
var _ ops.ProcessLister = (*confined)(nil)

func listProcesses(ctx context.Context, b ops.Backend) ([]ops.Process, error) {
	if pl, ok := b.(ops.ProcessLister); ok {
		return pl.Processes(ctx)
	}
	return nil, nil
}

func (c *confined) Processes(ctx context.Context) ([]ops.Process, error) {
	return listProcesses(ctx, c.b)
}
