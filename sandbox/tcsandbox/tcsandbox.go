package tcsandbox

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/testcontainers/testcontainers-go"

	"github.com/pi-sandbox/pi-sandbox/ops/docker"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
)

// Container is a running pi-sandbox container. It embeds
// testcontainers.Container, so testcontainers.CleanupContainer and
// TerminateContainer work on it.
type Container struct {
	testcontainers.Container

	workDir  string
	user     string
	policy   sandbox.Policy
	sbConfig func(*sandbox.Config)
}

// Run starts a container from img with the hardened profile and opts (this
// package's options and testcontainers'). On an error after the container
// was created, the returned Container is non-nil, for
// testcontainers.CleanupContainer.
func Run(ctx context.Context, img string, opts ...testcontainers.ContainerCustomizer) (*Container, error) {
	var s settings
	for _, opt := range opts {
		if o, ok := opt.(Option); ok {
			if err := o(&s); err != nil {
				return nil, err
			}
		}
	}
	cfg := s.cfg
	cfg.Image = img
	cli, err := docker.NewClient()
	if err != nil {
		return nil, fmt.Errorf("tcsandbox: %w", err)
	}
	defer cli.Close()
	ncpu, err := docker.CheckEngine(ctx, cli, cfg)
	if err != nil {
		return nil, fmt.Errorf("tcsandbox: %w", err)
	}
	cc, hc, err := docker.HardenedSpec(cfg, docker.KindEphemeral, ncpu)
	if err != nil {
		return nil, fmt.Errorf("tcsandbox: %w", err)
	}

	req := testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{Image: img, Labels: maps.Clone(cc.Labels)},
		Started:          true,
	}
	for _, opt := range opts {
		if _, ok := opt.(Option); ok {
			continue
		}
		if err := opt.Customize(&req); err != nil {
			return nil, fmt.Errorf("tcsandbox: customize: %w", err)
		}
	}
	userConfig, userHost := req.ConfigModifier, req.HostConfigModifier
	req.ConfigModifier = func(c *container.Config) {
		applyConfig(c, cc)
		if userConfig != nil {
			userConfig(c)
		}
	}
	req.HostConfigModifier = func(h *container.HostConfig) {
		applyHostConfig(h, hc)
		if userHost != nil {
			userHost(h)
		}
	}
	if s.workspace != "" {
		dir, dest, user := s.workspace, cc.WorkingDir, cc.User
		req.LifecycleHooks = append(req.LifecycleHooks, testcontainers.ContainerLifecycleHooks{
			PreStarts: []testcontainers.ContainerHook{func(ctx context.Context, c testcontainers.Container) error {
				return copyDir(ctx, c.GetContainerID(), dir, dest, user)
			}},
		})
	}
	ctr, err := testcontainers.GenericContainer(ctx, req)
	var c *Container
	if ctr != nil {
		c = &Container{Container: ctr, workDir: cc.WorkingDir, user: cc.User, policy: s.policy, sbConfig: s.sbConfig}
	}
	if err != nil {
		return c, fmt.Errorf("tcsandbox: %w", err)
	}
	return c, nil
}

// applyConfig puts the profile's container configuration on c (as
// testcontainers built it from the request): the profile's entrypoint,
// user, working directory and hostname; environment and labels merged.
func applyConfig(c, profile *container.Config) {
	c.Entrypoint = profile.Entrypoint
	if len(c.Cmd) == 0 {
		c.Cmd = profile.Cmd
	}
	c.User = profile.User
	c.WorkingDir = profile.WorkingDir
	c.Hostname = profile.Hostname
	c.Env = append(append([]string(nil), profile.Env...), c.Env...)
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	for k, v := range profile.Labels {
		if _, set := c.Labels[k]; !set || strings.HasPrefix(k, "pi-sandbox.") {
			c.Labels[k] = v
		}
	}
}

// applyHostConfig replaces h with the profile, keeping the mounts and port
// bindings testcontainers' options asked for.
func applyHostConfig(h, profile *container.HostConfig) {
	p := *profile
	p.Mounts = append(append(p.Mounts[:0:0], h.Mounts...), profile.Mounts...)
	p.PortBindings = h.PortBindings
	p.Binds = h.Binds
	*h = p
}

// Sandbox opens a sandbox on the container: the working directory is the
// writable /workspace (or WithWorkDir's), the user the profile's, with the
// policy of WithPolicy. Close it before terminating the container.
func (c *Container) Sandbox(ctx context.Context) (*sandbox.Sandbox, error) {
	b, err := docker.New(ctx, docker.Config{Container: c.GetContainerID(), WorkDir: c.workDir, User: c.user})
	if err != nil {
		return nil, fmt.Errorf("tcsandbox: %w", err)
	}
	cfg := sandbox.Config{Policy: c.policy}
	if c.sbConfig != nil {
		c.sbConfig(&cfg)
	}
	sb, err := sandbox.OpenBackend(ctx, b, cfg)
	if err != nil { // OpenBackend closed b
		return nil, fmt.Errorf("tcsandbox: %w", err)
	}
	return sb, nil
}
