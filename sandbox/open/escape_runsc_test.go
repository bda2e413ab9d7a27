package open_test

import (
	"context"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/ops/docker"
	"github.com/pi-sandbox/pi-sandbox/sandbox/sandboxtest"
)

// TestEscapesRunsc runs the escape suite in a hardened busybox container on
// gVisor (the runtime "runsc", registered by `make runtimes`).
func TestEscapesRunsc(t *testing.T) {
	cli := needEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.Info.Runtimes["runsc"]; !ok {
		skipOrFail(t, "the engine has no runtime runsc (make runtimes registers it)")
	}
	id, err := docker.Up(ctx, docker.Config{Image: dockerImage, Runtime: "runsc", Labels: map[string]string{"pi-sandbox.test": "sandbox-" + t.Name()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { downContainer(t, cli, id) })
	sandboxtest.Run(t, func(t *testing.T) sandboxtest.Target {
		w, o := containerDirs(t, id, "/tmp/esc")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		b, err := docker.New(ctx, docker.Config{Container: id, WorkDir: w})
		if err != nil {
			t.Fatal(err)
		}
		return sandboxtest.Target{Backend: b, Outside: o}
	})
}
