package sandbox

import (
	"context"
	"errors"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// openLocal is replaced when the local backend lands.
func openLocal(ctx context.Context, cfg Config) (ops.Backend, error) {
	return nil, errors.New("sandbox: the local backend is not implemented yet")
}
