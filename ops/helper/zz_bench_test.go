package helper_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/helper"
	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

func BenchmarkZZRead1K(b *testing.B) {
	t := &testing.T{}
	_ = t
	dir := b.TempDir()
	p := filepath.Join(dir, "f")
	os.WriteFile(p, make([]byte, 1024), 0o644)
	ctx := context.Background()
	be0 := openB(b)
	be, err := be0.(ops.Confiner).Confine(ctx, []ops.Root{{Path: dir}})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("stat", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := be.Stat(ctx, p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("open", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			r, err := be.Open(ctx, p)
			if err != nil {
				b.Fatal(err)
			}
			io.ReadAll(r)
			r.Close()
		}
	})
	b.Run("checkedopen", func(b *testing.B) {
		co := be.(ops.CheckedOpenFS)
		for i := 0; i < b.N; i++ {
			_, r, err := co.OpenChecked(ctx, p, ops.AccessMode(4))
			if err != nil {
				b.Fatal(err)
			}
			io.ReadAll(r)
			r.Close()
		}
	})
}

func openB(b *testing.B) ops.Backend {
	exe, _ := os.Executable()
	env := os.Environ()
	if shimEnvExtra != "" {
		env = append(env, shimEnvExtra)
	}
	c, err := helper.New(context.Background(), helper.Config{
		Name:  "pipe",
		Dial:  helper.ExecDial(exe, env),
		Hello: proto.Hello{WorkDir: proto.Str(b.TempDir()), SpillDir: proto.Str(b.TempDir())},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}
