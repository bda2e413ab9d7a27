package native_test

import (
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/native"
)

func benchRun(b *testing.B, cfg native.Config) {
	cfg.WorkDir = b.TempDir()
	be, err := native.New(b.Context(), withShim(cfg))
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	for b.Loop() {
		if err := be.Run(b.Context(), &ops.Cmd{Command: "true"}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRunShim(b *testing.B)   { benchRun(b, native.Config{}) }
func BenchmarkRunNoShim(b *testing.B) { benchRun(b, native.Config{NoShim: true}) }
