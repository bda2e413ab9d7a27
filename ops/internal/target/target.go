// Package target holds what the backends share about their targets: one
// map from what a target reports about itself (uname) to Go's spelling, so
// every backend picks the same shim for the same machine, and one parser of
// the HOST:TARGET[:ro] mount flag and the zero-value rule of resource
// limits (docker and k8s).
package target

import "strings"

// GOARCH returns the GOARCH of a machine name as `uname -m` prints it
// ("x86_64" → "amd64", "armv7l" → "arm"). A name that already is a GOARCH
// is returned as it is; an unknown one too, so it matches no shim.
func GOARCH(machine string) string {
	m := strings.TrimSpace(machine)
	switch m {
	case "x86_64", "amd64", "x64":
		return "amd64"
	case "aarch64", "arm64", "aarch64_be":
		return "arm64"
	case "i386", "i486", "i586", "i686", "x86":
		return "386"
	case "armv8l", "arm":
		return "arm" // armv8l: a 32-bit userland on a 64-bit ARM kernel
	case "loongarch64":
		return "loong64"
	case "mips64el":
		return "mips64le"
	case "mipsel":
		return "mipsle"
	case "ppc64le", "ppc64", "riscv64", "s390x", "mips", "mips64", "loong64":
		return m
	}
	if strings.HasPrefix(m, "armv") { // armv5tel, armv6l, armv7l, armv7hl
		return "arm"
	}
	return m
}

// GOOS returns the GOOS of a kernel name as `uname -s` prints it ("Linux" →
// "linux").
func GOOS(kernel string) string {
	return strings.ToLower(strings.TrimSpace(kernel))
}
