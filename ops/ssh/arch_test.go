package sshops

import "testing"

// TestGoOSArch: the ssh backend reads `uname -sm` with the same map as the
// docker backend, so a 32-bit ARM host gets the arm shim.
func TestGoOSArch(t *testing.T) {
	for uname, want := range map[string]string{
		"Linux x86_64": "linux/amd64", "Linux aarch64": "linux/arm64",
		"Linux armv7l": "linux/arm", "Linux armv6l": "linux/arm", "Linux i686": "linux/386",
		"Darwin arm64": "darwin/arm64", "garbage": "/",
	} {
		if goos, goarch := goOSArch(uname); goos+"/"+goarch != want {
			t.Errorf("goOSArch(%q) = %s/%s, want %s", uname, goos, goarch, want)
		}
	}
}
