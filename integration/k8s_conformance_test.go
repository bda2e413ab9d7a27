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
// With the helper (one long-lived exec) the whole suite runs on every
// image; without it (one exec per operation, the fallback) the core cases
// run on fallbackImage, as in TestDockerConformance.
func TestK8sConformance(t *testing.T) {
	for _, image := range []string{k8sBusybox, k8sDebian} {
		t.Run(shortName(image[:len(image)-len(":latest")]), func(t *testing.T) {
			pod := upPod(t, image, "conformance")
			open := func(noHelper bool) func(t *testing.T) ops.Backend {
				return func(t *testing.T) ops.Backend {
					b := newK8s(t, k8s.Config{Pod: pod, NoHelper: noHelper}, "conformance")
					if got := b.Info().Has("helper"); got == noHelper {
						t.Fatalf("helper capability %v, want %v (limits %v)", got, !noHelper, b.Info().Limits)
					}
					return b
				}
			}
			t.Run("helper", func(t *testing.T) { opstest.TestBackend(t, open(false)) })
			if image == "docker.io/"+fallbackImage+":latest" {
				t.Run("nohelper", func(t *testing.T) { opstest.TestBackendCore(t, open(true), opstest.Gaps{}) })
			}
		})
	}
}
