package integration

import (
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/k8s"
	"github.com/pi-sandbox/pi-sandbox/ops/opstest"
)

// TestK8sConformance runs the ops conformance suite in one long-lived
// hardened pod per image (Up); each case gets a fresh backend on it (its
// own helper, or none), which is how `pi-sandbox --backend k8s --pod` works.
func TestK8sConformance(t *testing.T) {
	for _, image := range []string{k8sBusybox, k8sDebian} {
		t.Run(shortName(image[:len(image)-len(":latest")]), func(t *testing.T) {
			pod := upPod(t, image, "conformance")
			// With the helper (one long-lived exec) and without it (one
			// exec per operation, the fallback).
			for _, noHelper := range []bool{false, true} {
				t.Run(map[bool]string{false: "helper", true: "nohelper"}[noHelper], func(t *testing.T) {
					opstest.TestBackend(t, func(t *testing.T) ops.Backend {
						b := newK8s(t, k8s.Config{Pod: pod, NoHelper: noHelper}, "conformance")
						if got := b.Info().Has("helper"); got == noHelper {
							t.Fatalf("helper capability %v, want %v (limits %v)", got, !noHelper, b.Info().Limits)
						}
						return b
					})
				})
			}
		})
	}
}
