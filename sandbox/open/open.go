package open

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/crypto/ssh"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/docker"
	sshops "github.com/pi-sandbox/pi-sandbox/ops/ssh"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
)

// Open opens the backend cfg names and makes a sandbox on it
// ([sandbox.OpenBackend] with cfg.Config).
func Open(ctx context.Context, cfg Config) (*sandbox.Sandbox, error) {
	cfg.Backend = cfg.BackendName()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var b ops.Backend
	var err error
	switch cfg.Backend {
	case "", "local":
		b, err = openLocal(ctx, cfg)
	case "docker":
		b, err = openDocker(ctx, cfg)
	case "ssh":
		b, err = openSSH(ctx, cfg)
	case "k8s":
		b, err = openK8s(ctx, cfg)
	}
	if err != nil {
		return nil, err
	}
	if cfg.AutoCheckpointNote == nil {
		cfg.AutoCheckpointNote = cfg.Note
	}
	return sandbox.OpenBackend(ctx, b, cfg.Config)
}

// Container makes a sandbox in an existing, running container, used as it
// is (no hardening profile is applied; the container is not removed by
// Close). cfg.WorkDir (zero: the container's working directory),
// cfg.Docker.User (zero: the container's user) and cfg.NoHelper apply, with
// confinement and policy; the engine is the one the environment names (DOCKER_HOST ...).
func Container(ctx context.Context, id string, cfg Config) (*sandbox.Sandbox, error) {
	if id == "" {
		return nil, errors.New("open: empty container id")
	}
	b, err := docker.New(ctx, docker.Config{Container: id, WorkDir: cfg.WorkDir, User: cfg.Docker.User, NoHelper: cfg.NoHelper})
	if err != nil {
		return nil, err
	}
	return sandbox.OpenBackend(ctx, b, cfg.Config)
}

// SSHClient makes a sandbox over an existing SSH connection, for programs
// that already hold one. cfg.WorkDir (zero: the remote home) and
// cfg.NoHelper apply, with confinement and policy. Close leaves client open.
func SSHClient(ctx context.Context, client *ssh.Client, cfg Config) (*sandbox.Sandbox, error) {
	if client == nil {
		return nil, errors.New("open: nil ssh client")
	}
	b, err := sshops.NewFromClient(ctx, client, sshops.Config{WorkDir: cfg.WorkDir, NoHelper: cfg.NoHelper})
	if err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	return sandbox.OpenBackend(ctx, b, cfg.Config)
}
