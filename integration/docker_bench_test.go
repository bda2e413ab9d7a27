package integration

import (
	"bytes"
	"io"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

// BenchmarkDocker measures round trips on an open backend against the raw
// API and the docker CLI in the same container:
//
//	go test -run '^$' -bench Docker -benchtime 50x ./integration/
func BenchmarkDocker(b *testing.B) {
	cli := needImage(b, "pi-sandbox/busybox")
	be, err := docker.New(b.Context(), docker.Config{Image: "pi-sandbox/busybox", Labels: labels()})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	ctx := b.Context()
	if err := be.WriteFile(ctx, "/workspace/f.txt", []byte("hello\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("RawExecTrue", func(b *testing.B) {
		for b.Loop() {
			cr, err := cli.ExecCreate(ctx, be.ID(), client.ExecCreateOptions{Cmd: []string{"true"}, AttachStdout: true, AttachStderr: true})
			if err != nil {
				b.Fatal(err)
			}
			ar, err := cli.ExecAttach(ctx, cr.ID, client.ExecAttachOptions{})
			if err != nil {
				b.Fatal(err)
			}
			stdcopy.StdCopy(io.Discard, io.Discard, ar.Reader)
			ar.Close()
			for {
				r, err := cli.ExecInspect(ctx, cr.ID, client.ExecInspectOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if !r.Running {
					break
				}
			}
		}
	})
	b.Run("CLIExecTrue", func(b *testing.B) {
		if _, err := exec.LookPath("docker"); err != nil {
			testenv.SkipOrFail(b, "no docker CLI")
		}
		for b.Loop() {
			if out, err := exec.Command("docker", "exec", be.ID(), "true").CombinedOutput(); err != nil {
				b.Fatalf("%v %s", err, out)
			}
		}
	})
	b.Run("RunTrue", func(b *testing.B) {
		for b.Loop() {
			if err := be.Run(ctx, &ops.Cmd{Command: "true"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("RunTrueNoShim", func(b *testing.B) {
		// The fallback asked for, with no helper binary on this machine:
		// the plain wrapper runs commands.
		plain, err := docker.New(ctx, docker.Config{Container: be.ID(), NoHelper: true, ShimBinary: filepath.Join(b.TempDir(), "absent")})
		if err != nil {
			b.Fatal(err)
		}
		defer plain.Close()
		for b.Loop() {
			if err := plain.Run(ctx, &ops.Cmd{Command: "true"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("RunEcho", func(b *testing.B) {
		var out bytes.Buffer
		for b.Loop() {
			out.Reset()
			if err := be.Run(ctx, &ops.Cmd{Command: "echo hi", Output: &out}); err != nil || out.String() != "hi\n" {
				b.Fatal(err, out.String())
			}
		}
	})
	b.Run("Stat", func(b *testing.B) {
		for b.Loop() {
			if _, err := be.Stat(ctx, "/workspace/f.txt"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ReadFile", func(b *testing.B) {
		for b.Loop() {
			if _, err := ops.ReadFile(ctx, be, "/workspace/f.txt"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("WriteFile", func(b *testing.B) {
		for b.Loop() {
			if err := be.WriteFile(ctx, "/workspace/f.txt", []byte("hello\n"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	})
}
