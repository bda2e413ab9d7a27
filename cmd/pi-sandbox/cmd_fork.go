package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/moby/moby/client"
	"github.com/pi-sandbox/pi-sandbox/ops/docker"
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
	f := newFlags("fork", "[flags] --count N [--pool NAME] ID", io)
	f.about = "Starts N new up sandboxes like the one --container names (its image, runtime, user, working\ndirectory and limits; with --pool, claimed from that pool instead) whose working directory — a\nfresh volume, never the source's bind mount — holds checkpoint ID of the source, and prints\ntheir ids, one per line. A sandbox that fails is removed: the ids made are printed, the\nfailures named on stderr, exit 1."
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
	if f.cfg.Backend == "k8s" {
		fmt.Fprintln(io.err, "pi-sandbox fork: the k8s backend cannot fork yet: export the checkpoint (checkpoint export) and import it into new pods (checkpoint import, restore)")
		return 2
	}
	if f.cfg.Backend != "docker" || f.cfg.Docker.Container == "" {
		return f.usageError("fork needs the source: --container ID of a docker up sandbox")
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

	cli, err := docker.NewClient()
	if err != nil {
		fmt.Fprintf(io.err, "pi-sandbox fork: %v\n", err)
		return openExitCode(err)
	}
	defer cli.Close()
	var fc docker.Config
	if *pool == "" {
		if fc, err = docker.ForkConfig(ctx, cli, f.cfg.Docker.Container); err != nil {
			fmt.Fprintf(io.err, "pi-sandbox fork: %v\n", err)
			return openExitCode(err)
		}
		if _, ok := fc.Labels[labelOwner]; !ok {
			fc.Labels[labelOwner] = ownerValue()
		}
		fc.Client = cli
	}
	note := noteTo("fork", io)
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
			ids[i], errs[i] = forkOne(ctx, cli, fc, *pool, tmp.Name(), cp, note)
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

// forkOne starts (or claims) one sandbox and makes its working directory
// the checkpoint in file; a sandbox that fails is removed.
func forkOne(ctx context.Context, cli *client.Client, fc docker.Config, pool, file, cp string, note func(string)) (string, error) {
	var id string
	var err error
	if pool != "" {
		id, err = docker.Claim(ctx, cli, pool, false, note)
	} else {
		id, err = docker.Up(ctx, fc)
	}
	if err != nil {
		return "", err
	}
	if err := fill(ctx, id, file, cp); err != nil {
		if derr := docker.Down(context.WithoutCancel(ctx), cli, id); derr != nil {
			err = errors.Join(err, fmt.Errorf("removing %s: %w", shortID(id), derr))
		}
		return "", err
	}
	return id, nil
}

// fill imports the checkpoint in file into sandbox id and restores it.
func fill(ctx context.Context, id, file, cp string) error {
	sb, err := open.Open(ctx, open.Config{Backend: "docker", Docker: open.DockerConfig{Container: id}})
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
