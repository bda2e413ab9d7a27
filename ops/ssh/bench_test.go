package sshops_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
	sshops "github.com/pi-sandbox/pi-sandbox/ops/ssh"
	"github.com/pi-sandbox/pi-sandbox/ops/ssh/sshtest"
)

// benchServer is one sshd for all benchmarks of a run.
func benchBackend(b *testing.B, o sshtest.Options) (*sshops.Backend, *sshtest.Server) {
	s := sshtest.StartWith(b, o)
	cfg := s.Config()
	cfg.WorkDir = s.TempDir(b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	be, err := sshops.New(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { be.Close() })
	return be, s
}

// BenchmarkRunTrue is the latency of Run("true"): one session, the login
// shell, the wrapper.
func BenchmarkRunTrue(b *testing.B) {
	be, _ := benchBackend(b, sshtest.Options{})
	ctx := context.Background()
	for b.Loop() {
		if err := be.Run(ctx, &ops.Cmd{Command: "true"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunTrueSlowRC logs in as a user whose ~/.bashrc takes 300 ms
// (pyenv, nvm and conda inits cost that much): sshd runs every exec request
// through the login shell, so every command pays it.
func BenchmarkRunTrueSlowRC(b *testing.B) {
	be, _ := benchBackend(b, sshtest.Options{BashRC: "sleep 0.3"})
	ctx := context.Background()
	for b.Loop() {
		if err := be.Run(ctx, &ops.Cmd{Command: "true"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunTrueCurrentUser logs in as the user running the test (root
// in CI), whose rc files may be slow: the login-shell cost per command.
func BenchmarkRunTrueCurrentUser(b *testing.B) {
	be, _ := benchBackend(b, sshtest.Options{CurrentUser: true})
	ctx := context.Background()
	for b.Loop() {
		if err := be.Run(ctx, &ops.Cmd{Command: "true"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadSmall is the latency of reading a 100-byte file over SFTP.
func BenchmarkReadSmall(b *testing.B) {
	be, _ := benchBackend(b, sshtest.Options{})
	ctx := context.Background()
	name := path.Join(be.Info().WorkDir, "small")
	if err := be.WriteFile(ctx, name, bytes.Repeat([]byte("x"), 100), 0o644); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := ops.ReadFile(ctx, be, name); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpen is the cost of New plus Close (dial, probe, shim check,
// spill directory).
func BenchmarkOpen(b *testing.B) {
	s := sshtest.Start(b)
	cfg := s.Config()
	cfg.WorkDir = s.TempDir(b)
	ctx := context.Background()
	for b.Loop() {
		be, err := sshops.New(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		be.Close()
	}
}

const bigSize = 64 << 20

// BenchmarkSFTPWrite64MiB streams 64 MiB through OpenWriter.
func BenchmarkSFTPWrite64MiB(b *testing.B) {
	be, _ := benchBackend(b, sshtest.Options{})
	ctx := context.Background()
	data := bytes.Repeat([]byte("0123456789abcdef"), bigSize/16)
	name := path.Join(be.Info().WorkDir, "big")
	b.SetBytes(bigSize)
	for b.Loop() {
		w, err := be.OpenWriter(ctx, name, os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			b.Fatal(err)
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSFTPRead64MiB streams 64 MiB through Open.
func BenchmarkSFTPRead64MiB(b *testing.B) {
	be, _ := benchBackend(b, sshtest.Options{})
	ctx := context.Background()
	data := bytes.Repeat([]byte("0123456789abcdef"), bigSize/16)
	name := path.Join(be.Info().WorkDir, "big")
	if err := be.WriteFile(ctx, name, data, 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(bigSize)
	for b.Loop() {
		r, err := be.Open(ctx, name)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, r)
		r.Close()
		if err != nil || n != bigSize {
			b.Fatal(n, err)
		}
	}
}
