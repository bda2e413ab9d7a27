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
func TestConformance(t *testing.T) {
	s := sshtest.Start(t)
	opstest.TestBackend(t, func(t *testing.T) ops.Backend {
		return s.Open(t, s.Config())
	})
}
