package sandbox

import (
	"context"
	"errors"

	"golang.org/x/crypto/ssh"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/docker"
	sshops "github.com/pi-sandbox/pi-sandbox/ops/ssh"
)

// OpenBackend makes a sandbox on a backend the caller opened (any
// [ops.Backend]): cfg's confinement and policy apply; its backend fields are
// ignored. The sandbox owns b: Close closes it, also when OpenBackend fails.
func OpenBackend(ctx context.Context, b ops.Backend, cfg Config) (*Sandbox, error) {
	if b == nil {
		return nil, errors.New("sandbox: nil backend")
	}
	s, err := finish(ctx, cfg, func(context.Context) (ops.Backend, error) { return b, nil })
	if err != nil {
		b.Close() // safe twice (ops.Backend.Close)
	}
	return s, err
}

// OpenContainer makes a sandbox in an existing, running container, used as
// it is (no hardening profile is applied; the container is not removed by
// Close). cfg.WorkDir (zero: the container's working directory) and
// cfg.Docker.User (zero: the container's user) apply, with confinement and
// policy; the engine is the one the environment names (DOCKER_HOST ...).
func OpenContainer(ctx context.Context, id string, cfg Config) (*Sandbox, error) {
	if id == "" {
		return nil, errors.New("sandbox: empty container id")
	}
	return finish(ctx, cfg, func(ctx context.Context) (ops.Backend, error) {
		b, err := docker.New(ctx, docker.Config{Container: id, WorkDir: cfg.WorkDir, User: cfg.Docker.User})
		if err != nil {
			return nil, err
		}
		return b, nil
	})
}

// OpenSSHClient makes a sandbox over an existing SSH connection, for programs
// that already hold one. cfg.WorkDir (zero: the remote home) applies, with
// confinement and policy. Close leaves client open.
func OpenSSHClient(ctx context.Context, client *ssh.Client, cfg Config) (*Sandbox, error) {
	if client == nil {
		return nil, errors.New("sandbox: nil ssh client")
	}
	return finish(ctx, cfg, func(ctx context.Context) (ops.Backend, error) {
		b, err := sshops.NewFromClient(ctx, client, sshops.Config{WorkDir: cfg.WorkDir})
		if err != nil {
			return nil, err
		}
		return b, nil
	})
}
