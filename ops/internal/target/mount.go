package target

import (
	"fmt"
	"path"
	"strings"
)

// ParseMount parses a mount flag, HOST:TARGET[:ro|:rw], for the backends
// that mount host paths (docker bind mounts, k8s hostPath volumes); the
// error names the flag, for the backend to prefix with its name.
func ParseMount(s string) (source, target string, readOnly bool, err error) {
	parts := strings.Split(s, ":")
	switch {
	case len(parts) == 2:
	case len(parts) == 3 && (parts[2] == "ro" || parts[2] == "rw"):
		readOnly = parts[2] == "ro"
	default:
		return "", "", false, fmt.Errorf("mount %q: want HOST:TARGET[:ro]", s)
	}
	if !path.IsAbs(parts[0]) || !path.IsAbs(parts[1]) {
		return "", "", false, fmt.Errorf("mount %q: both paths must be absolute", s)
	}
	return parts[0], parts[1], readOnly, nil
}
