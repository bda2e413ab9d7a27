package sshops_test

import (
	"context"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/opstest"
	sshops "github.com/pi-sandbox/pi-sandbox/ops/ssh"
	"github.com/pi-sandbox/pi-sandbox/ops/ssh/sshtest"
)

// TestConformance runs the ops suite against a real sshd, one server for
// all cases and a fresh backend (own connections, own working directory)
// per case.
func TestConformance(t *testing.T) {
	s := sshtest.Start(t)
	opstest.TestBackend(t, func(t *testing.T) ops.Backend {
		cfg := s.Config()
		cfg.WorkDir = s.TempDir(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		b, err := sshops.New(ctx, cfg)
		if err != nil {
			t.Fatalf("sshops.New: %v\n%s", err, s.Log())
		}
		t.Cleanup(func() { b.Close() })
		return b
	})
}
