package sandbox

import (
	"context"
	"errors"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// openSSH is replaced when the ssh backend lands.
func openSSH(ctx context.Context, cfg Config) (ops.Backend, error) {
	return nil, errors.New("sandbox: the ssh backend is not implemented yet")
}
