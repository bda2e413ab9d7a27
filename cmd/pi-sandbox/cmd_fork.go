package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/pi-sandbox/pi-sandbox/ops/docker"
	"github.com/pi-sandbox/pi-sandbox/ops/k8s"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
	"github.com/pi-sandbox/pi-sandbox/sandbox/open"
)

func init() {
	register("fork", &command{summary: "start N up sandboxes holding a checkpoint of this one; print their ids", run: runFork})
}

// maxFork bounds --count, forkParallel the sandboxes made at once.
const (
	maxFork      = 64
	forkParallel = 4
)

// runFork is `pi-sandbox fork [flags] --count N [--pool NAME] ID`.
func runFork(ctx context.Context, args []string, io stdio) int {
	f := newFlags("fork", "[flags] (--container ID | --backend k8s --pod NAME) --count N [--pool NAME] ID", io)
	f.about = "Starts N new up sandboxes like the one --container names (--backend k8s --pod: an up pod;\nits image, runtime, user, working directory and limits; with --pool, claimed from that docker\npool instead) whose working directory — a fresh volume, never the source's bind mount — holds\ncheckpoint ID of the source, and prints their ids (pod names), one per line. A sandbox that\nfails is removed: the ids made are printed, the failures named on stderr, exit 1."
	count := f.Int("count", 1, "make `N` sandboxes (at most 64)")
	pool := f.String("pool", "", "claim the sandboxes from docker pool `NAME` (pi-sandbox pool fill) instead of starting them")
	rest, code, ok := f.parse(args)
	if !ok {
		return code
	}
	if len(rest) != 1 {
		return f.usageError("want the ID of one checkpoint of the source sandbox")
	}
	if *count < 1 || *count > maxFork {
		return f.usageError("--count %d: want 1 to %d", *count, maxFork)
	}
	src := f.cfg.Docker.Container
	switch {
	case f.cfg.Backend == "k8s":
		if *pool != "" {
			return f.usageError("--pool is for the docker backend")
		}
		src = f.cfg.K8s.Pod
		if src == "" {
			return f.usageError("fork needs the source: --pod NAME of an up pod (--backend k8s)")
		}
	case f.cfg.Backend != "docker" || src == "":
		return f.usageError("fork needs the source: --container ID of a docker up sandbox (or --backend k8s --pod NAME)")
	}
	if *pool != "" {
		if err := docker.CheckPoolName(*pool); err != nil {
			return f.usageError("%v", err)
		}
	}

	// The checkpoint leaves the source once, into a temporary file.
	tmp, err := os.CreateTemp("", "pi-sandbox-fork-*.tar")
	if err != nil {
		fmt.Fprintf(io.err, "pi-sandbox fork: %v\n", err)
		return 1
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	var cp string
	if code := withSandbox(ctx, "fork", f.cfg, io, func(sb *sandbox.Sandbox) error {
		bw := bufio.NewWriterSize(tmp, 256<<10)
		c, err := sb.ExportCheckpoint(ctx, bw, rest[0])
		if err != nil {
			return err
		}
		cp = c.ID
		return bw.Flush()
	}); code != 0 {
		return code
	}

	note := noteTo("fork", io)
	ft, closeFn, err := newForkTarget(ctx, f.cfg, src, *pool, note)
	if err != nil {
		fmt.Fprintf(io.err, "pi-sandbox fork: %v\n", err)
		return openExitCode(err)
	}
	defer closeFn()
	ids := make([]string, *count)
	errs := make([]error, *count)
	sem := make(chan struct{}, forkParallel)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			ids[i], errs[i] = ft.one(ctx, tmp.Name(), cp)
		}()
	}
	wg.Wait()
	failed := 0
	for i, id := range ids {
		if errs[i] != nil {
			failed++
			fmt.Fprintf(io.err, "pi-sandbox fork: sandbox %d of %d: %v\n", i+1, *count, errs[i])
			continue
		}
		fmt.Fprintln(io.out, id)
	}
	if failed > 0 {
		fmt.Fprintf(io.err, "pi-sandbox fork: %d of %d sandboxes failed and were removed\n", failed, *count)
		return 1
	}
	return 0
}

// forkTarget makes, opens and removes the sandboxes of a fork.
type forkTarget struct {
	make func(context.Context) (string, error)
	down func(context.Context, string) error
	open func(context.Context, string) (*sandbox.Sandbox, error)
}

// newForkTarget is the docker or k8s way to make sandboxes like src (or,
// on docker with pool, to claim them).
func newForkTarget(ctx context.Context, cfg open.Config, src, pool string, note func(string)) (*forkTarget, func(), error) {
	if cfg.Backend == "k8s" {
		base := k8s.Config{Kubeconfig: cfg.K8s.Kubeconfig, Context: cfg.K8s.Context, Namespace: cfg.K8s.Namespace}
		c, err := k8s.NewClient(base)
		if err != nil {
			return nil, nil, err
		}
		kc, err := k8s.ForkConfig(ctx, c, base, src)
		if err != nil {
			return nil, nil, err
		}
		return &forkTarget{
			make: func(ctx context.Context) (string, error) { return k8s.Up(ctx, kc) },
			down: func(ctx context.Context, name string) error { return k8s.Down(ctx, c, name) },
			open: func(ctx context.Context, name string) (*sandbox.Sandbox, error) {
				k := cfg.K8s
				k.Pod = name
				return open.Open(ctx, open.Config{Backend: "k8s", K8s: k})
			},
		}, func() {}, nil
	}
	cli, err := docker.NewClient()
	if err != nil {
		return nil, nil, err
	}
	ft := &forkTarget{
		down: func(ctx context.Context, id string) error { return docker.Down(ctx, cli, id) },
		open: func(ctx context.Context, id string) (*sandbox.Sandbox, error) {
			return open.Open(ctx, open.Config{Backend: "docker", Docker: open.DockerConfig{Container: id}})
		},
	}
	if pool != "" {
		ft.make = func(ctx context.Context) (string, error) { return docker.Claim(ctx, cli, pool, false, note) }
		return ft, func() { cli.Close() }, nil
	}
	fc, err := docker.ForkConfig(ctx, cli, src)
	if err != nil {
		cli.Close()
		return nil, nil, err
	}
	if _, ok := fc.Labels[labelOwner]; !ok {
		fc.Labels[labelOwner] = ownerValue()
	}
	fc.Client = cli
	ft.make = func(ctx context.Context) (string, error) { return docker.Up(ctx, fc) }
	return ft, func() { cli.Close() }, nil
}

// one makes one sandbox and makes its working directory the checkpoint
// in file; a sandbox that fails is removed.
func (ft *forkTarget) one(ctx context.Context, file, cp string) (string, error) {
	id, err := ft.make(ctx)
	if err != nil {
		return "", err
	}
	if err := ft.fill(ctx, id, file, cp); err != nil {
		if derr := ft.down(context.WithoutCancel(ctx), id); derr != nil {
			err = errors.Join(err, fmt.Errorf("removing %s: %w", shortID(id), derr))
		}
		return "", err
	}
	return id, nil
}

// fill imports the checkpoint in file into sandbox id and restores it.
func (ft *forkTarget) fill(ctx context.Context, id, file, cp string) error {
	sb, err := ft.open(ctx, id)
	if err != nil {
		return err
	}
	defer sb.Close()
	r, err := os.Open(file)
	if err != nil {
		return err
	}
	defer r.Close()
	c, err := sb.ImportCheckpoint(ctx, bufio.NewReaderSize(r, 256<<10), "")
	if err != nil {
		return fmt.Errorf("importing checkpoint %s: %w", cp, err)
	}
	if _, _, err := sb.Restore(ctx, c.ID); err != nil {
		return fmt.Errorf("restoring checkpoint %s: %w", cp, err)
	}
	return nil
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
