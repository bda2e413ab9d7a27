package docker

import "testing"

// TestGoarch: the docker backend reads `uname -m` with the same map as the
// ssh backend.
func TestGoarch(t *testing.T) {
	for m, want := range map[string]string{
		"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "armv5tel": "arm",
		"armv8l": "arm", "i686": "386", "": "",
	} {
		if got := goarch(m); got != want {
			t.Errorf("goarch(%q) = %q, want %q", m, got, want)
		}
	}
}
