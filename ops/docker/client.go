package docker

import (
	"context"
	"fmt"

	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// NewClient returns an Engine API client configured from the environment
// (DOCKER_HOST, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH, DOCKER_API_VERSION); the
// API version is negotiated with the engine on first use, so older engines
// (API 1.41, Debian's docker.io 20.10) work.
func NewClient() (*client.Client, error) {
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return nil, fmt.Errorf("docker: client: %w", err)
	}
	return cli, nil
}

// Ping checks that the engine answers and returns its API version. A
// failure wraps ops.ErrTransport.
func Ping(ctx context.Context, cli *client.Client) (string, error) {
	p, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
	if err != nil {
		return "", fmt.Errorf("docker: engine at %s unreachable: %w: %w", cli.DaemonHost(), ops.ErrTransport, err)
	}
	return p.APIVersion, nil
}
