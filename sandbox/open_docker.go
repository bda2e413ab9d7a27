package sandbox

import (
	"context"
	"errors"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// openDocker is replaced when the docker backend lands.
func openDocker(ctx context.Context, cfg Config) (ops.Backend, error) {
	return nil, errors.New("sandbox: the docker backend is not implemented yet")
}
