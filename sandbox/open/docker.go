package open

import (
	"context"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

// openDocker opens the docker backend: --image IMG (an ephemeral container
// with the hardened profile, removed by Close) or --container ID (an
// existing container, used as it is), with --mount, --user and --workdir.
// The engine is the one the environment names (DOCKER_HOST ...).
func openDocker(ctx context.Context, cfg Config) (ops.Backend, error) {
	dc, err := dockerConfig(cfg)
	if err != nil {
		return nil, err
	}
	return docker.New(ctx, dc)
}

func dockerConfig(cfg Config) (docker.Config, error) {
	dc := docker.Config{
		Image:         cfg.Docker.Image,
		Container:     cfg.Docker.Container,
		User:          cfg.Docker.User,
		WorkDir:       cfg.WorkDir,
		Runtime:       cfg.Docker.Runtime,
		MaxBackground: cfg.MaxBackground,
		NoHelper:      cfg.NoHelper,
		Note:          cfg.Note,
	}
	for _, m := range cfg.Docker.Mounts {
		pm, err := docker.ParseMount(m)
		if err != nil {
			return dc, err
		}
		dc.Mounts = append(dc.Mounts, pm)
	}
	return dc, nil
}
