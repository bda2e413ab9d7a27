package sshops_test

import (
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/opstest"
	"github.com/pi-sandbox/pi-sandbox/ops/ssh/sshtest"
)

// TestConformance runs the ops suite against a real sshd, one server for
// all cases and a fresh backend (own connections, own working directory)
// per case.
// It runs with the helper (one long-lived session) and without it (SFTP
// and a session per command, the fallback).
func TestConformance(t *testing.T) {
	s := sshtest.Start(t)
	for _, noHelper := range []bool{false, true} {
		t.Run(map[bool]string{false: "helper", true: "nohelper"}[noHelper], func(t *testing.T) {
			opstest.TestBackend(t, func(t *testing.T) ops.Backend {
				cfg := s.Config()
				cfg.NoHelper = noHelper
				b := s.Open(t, cfg)
				if got := b.Info().Has("helper"); got == noHelper {
					t.Fatalf("helper capability %v, want %v (limits %v)", got, !noHelper, b.Info().Limits)
				}
				return b
			})
		})
	}
}
