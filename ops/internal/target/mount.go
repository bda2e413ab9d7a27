package target

import (
	"fmt"
	"os"
	"path"
	"strings"
	"syscall"
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

// MountUser is the user of a sandbox with a host mount of source and no
// user given: the owner (uid:gid) of source when this host can stat it,
// else def. A root-owned source keeps def (uid 0 is asked for, never
// chosen), and note, when set, says so and what to do.
func MountUser(source, def string, note func(string)) string {
	fi, err := os.Stat(source)
	if err != nil {
		return def
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return def
	}
	if st.Uid == 0 {
		if note != nil {
			note(RootMountNote(source, def))
		}
		return def
	}
	return fmt.Sprintf("%d:%d", st.Uid, st.Gid)
}

// RootMountNote says that the mount source belongs to root, the sandbox
// runs as user, and what to do.
func RootMountNote(source, user string) string {
	return fmt.Sprintf("the mount source %s belongs to root: the sandbox runs as %s and cannot write there; run `chown -R %s %s` to let it, or give --user 0:0 to run as root", source, user, user, source)
}
