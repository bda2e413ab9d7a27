package sshops_test

import (
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/opstest"
	"github.com/pi-sandbox/pi-sandbox/ops/ssh/sshtest"
)

// TestConformance runs the ops suite against a real sshd, one server for
// all cases and a fresh backend (own connections, own working directory)
// per case: the whole suite with the helper (one long-lived session), the
// core cases without it (SFTP and a session per command, the fallback).
func TestConformance(t *testing.T) {
	s := sshtest.Start(t)
	open := func(noHelper bool) func(t *testing.T) ops.Backend {
		return func(t *testing.T) ops.Backend {
			cfg := s.Config()
			cfg.NoHelper = noHelper
			b := s.Open(t, cfg)
			if got := b.Info().Has("helper"); got == noHelper {
				t.Fatalf("helper capability %v, want %v (limits %v)", got, !noHelper, b.Info().Limits)
			}
			return b
		}
	}
	t.Run("helper", func(t *testing.T) { opstest.TestBackend(t, open(false)) })
	t.Run("nohelper", func(t *testing.T) { opstest.TestBackendCore(t, open(true), opstest.Gaps{}) })
}
