package sandbox

import (
	"context"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

// openDocker opens the docker backend: an ephemeral hardened container from
// --image (removed by Close) or an existing one from --container, used as it
// is. The engine is the one the environment names (DOCKER_HOST ...).
func openDocker(ctx context.Context, cfg Config) (ops.Backend, error) {
	dc := docker.Config{
		Image:     cfg.Docker.Image,
		Container: cfg.Docker.Container,
		WorkDir:   cfg.WorkDir,
		User:      cfg.Docker.User,
	}
	for _, m := range cfg.Docker.Mounts {
		pm, err := docker.ParseMount(m)
		if err != nil {
			return nil, err
		}
		dc.Mounts = append(dc.Mounts, pm)
	}
	b, err := docker.New(ctx, dc)
	if err != nil {
		return nil, err
	}
	return b, nil
}
