package local_test

import (
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/local"
)

func benchRun(b *testing.B, cfg local.Config) {
	cfg.WorkDir = b.TempDir()
	be, err := local.New(b.Context(), cfg)
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

func BenchmarkRunShim(b *testing.B)   { benchRun(b, local.Config{}) }
func BenchmarkRunNoShim(b *testing.B) { benchRun(b, local.Config{NoShim: true}) }
