package target

import "testing"

func TestGOARCH(t *testing.T) {
	for machine, want := range map[string]string{
		"x86_64": "amd64", "amd64": "amd64",
		"aarch64": "arm64", "arm64": "arm64",
		"armv7l": "arm", "armv6l": "arm", "armv5tel": "arm", "armv8l": "arm", "arm": "arm",
		"i386": "386", "i686": "386",
		"riscv64": "riscv64", "ppc64le": "ppc64le", "s390x": "s390x",
		"loongarch64": "loong64", "mips64el": "mips64le",
		"x86_64\n": "amd64",
		"":         "",
		"sparc64":  "sparc64",
	} {
		if got := GOARCH(machine); got != want {
			t.Errorf("GOARCH(%q) = %q, want %q", machine, got, want)
		}
	}
}

func TestGOOS(t *testing.T) {
	if got := GOOS("Linux\n"); got != "linux" {
		t.Errorf("GOOS(Linux) = %q", got)
	}
}

func TestLimit(t *testing.T) {
	if Limit(int64(0), 7) != 7 || Limit(int64(-1), 7) != 0 || Limit(int64(3), 7) != 3 || Limit(0.0, 2.5) != 2.5 {
		t.Error("Limit: zero must give the default, a negative value none, any other itself")
	}
}
