package pool

import (
	"context"
	"time"

	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/ops/docker"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
)

// Pool is a named pool of idle Docker sandboxes of one configuration.
type Pool struct {
	// Name names the pool (letters, digits, '_', '.', '-').
	Name string
	// Config is the members' configuration as docker.Up takes it; Mounts
	// are refused (every claim would share them). Its Client, when set,
	// is used for every engine call, the claimed sandboxes' too (so it
	// must outlive them).
	Config docker.Config
	// Size is the number of idle members Fill and Keep keep.
	Size int
	// NoCold makes Claim fail (docker.ErrPoolEmpty) instead of starting a
	// member cold when none is idle.
	NoCold bool
	// Note, when set, hears what the caller should know (a cold start, a
	// failed refill).
	Note func(string)
}

// Fill makes sure the pool has Size idle running members and returns the
// ids it created (see docker.Fill).
func (p *Pool) Fill(ctx context.Context) ([]string, error) {
	return docker.Fill(ctx, p.Config, p.Name, p.Size, nil)
}

// Keep fills the pool every interval in the background until ctx ends or
// the returned stop is called (stop waits for the refill to end).
func (p *Pool) Keep(ctx context.Context, interval time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		docker.Keep(ctx, p.Config, p.Name, p.Size, interval, nil, p.Note)
	}()
	return func() { cancel(); <-done }
}

// Drain removes the pool's idle members and returns their ids.
func (p *Pool) Drain(ctx context.Context) ([]string, error) {
	cli, release, err := p.client()
	if err != nil {
		return nil, err
	}
	defer release()
	return docker.Drain(ctx, cli, p.Name)
}

// Claim takes an idle member (see docker.Claim) and opens it as a sandbox
// with cfg's confinement and policy. The sandbox's Close removes the
// container with its volumes.
func (p *Pool) Claim(ctx context.Context, cfg sandbox.Config) (*sandbox.Sandbox, error) {
	cli, release, err := p.client()
	if err != nil {
		return nil, err
	}
	defer release()
	id, err := docker.Claim(ctx, cli, p.Name, p.NoCold, p.Note)
	if err != nil {
		return nil, err
	}
	// The pool's own client, when it has one, serves the sandbox too (it
	// outlives the sandbox): no new connection to the engine per claim.
	b, err := docker.New(ctx, docker.Config{Container: id, Client: p.Config.Client, ShimBinary: p.Config.ShimBinary, RemoveOnClose: true})
	if err != nil {
		downID(id)
		return nil, err
	}
	return sandbox.OpenBackend(ctx, b, cfg)
}

// downID removes container id with a client of its own.
func downID(id string) error {
	cli, err := docker.NewClient()
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return docker.Down(ctx, cli, id)
}

func (p *Pool) client() (*client.Client, func(), error) {
	if p.Config.Client != nil {
		return p.Config.Client, func() {}, nil
	}
	cli, err := docker.NewClient()
	if err != nil {
		return nil, nil, err
	}
	return cli, func() { cli.Close() }, nil
}
