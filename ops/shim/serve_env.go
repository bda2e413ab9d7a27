package shim

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// targetEnv is the base environment of the commands a helper in a target
// (a container, a pod, an ssh host) runs: its own, with SHELL added as
// login(1) and sshd set it — the user's shell from /etc/passwd — when it is
// missing. docker exec and pods/exec do not set SHELL; without it bash looks
// the user up at every start (two connects to nscd's socket,
// nsswitch.conf, /etc/passwd: a dozen path walks, each a round trip to the
// storage driver's daemon on fuse-overlayfs) for the same value, which it
// then keeps unexported. A user without an entry in /etc/passwd (NSS only)
// gets nothing added: bash looks it up as before.
func targetEnv(env []string, passwd string, uid int) []string {
	for _, kv := range env {
		if strings.HasPrefix(kv, "SHELL=") {
			return env
		}
	}
	sh, ok := passwdShell(passwd, uid)
	if !ok {
		return env
	}
	return append(env[:len(env):len(env)], "SHELL="+sh)
}

// helperEnv is targetEnv of this process's own environment and user.
func helperEnv() []string {
	return targetEnv(os.Environ(), "/etc/passwd", os.Getuid())
}

// passwdShell returns the login shell of uid from the passwd file at path,
// as bash's own lookup does: /bin/sh when the entry's field is empty.
func passwdShell(path string, uid int) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	want := strconv.Itoa(uid)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// name:password:UID:GID:GECOS:directory:shell (not NIS's +/- lines)
		fields := strings.Split(sc.Text(), ":")
		if len(fields) != 7 || fields[2] != want || strings.HasPrefix(fields[0], "+") || strings.HasPrefix(fields[0], "-") {
			continue
		}
		if fields[6] == "" {
			return "/bin/sh", true
		}
		return fields[6], true
	}
	return "", false
}
