package shim

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"golang.org/x/sys/unix"
)

// The sandbox's helper key reaches only processes that were never
// dumpable. A dumpable process of the sandbox user is open to every other
// process of that user: it can open the process's descriptors through
// /proc/PID/fd (and read, tee(2) or write its pipes) or trace it, and a
// descriptor opened then still works after the process makes itself
// non-dumpable. The kernel makes a process non-dumpable at its exec when
// its user cannot read the executable; so the helper binary is installed
// execute-only (mode 0711, root's) and the relay is the exec's own process
// (no shell before it holds its stdin). Such a relay is sealed: nothing
// else ever held its descriptors. It says so before it reads the key, and
// the client sends the key only to a sealed relay. The daemon it starts is
// exec'd from the same binary (sealed too) and reads the key from a pipe
// the relay made. A runtime that ignores the rule (gVisor makes every exec
// dumpable), or a binary the user can read, gives an exposed relay: it
// gets no key, and the daemon it reaches is not authenticated.

// relayMagic starts the line a relay started with --key-stdin writes
// before it reads its stdin: "pi-sandbox-relay sealed" or
// "pi-sandbox-relay exposed". The client answers with the key line, or
// "-" for none.
const relayMagic = "pi-sandbox-relay"

// sealedSinceExec reports whether this process has been non-dumpable since
// its exec (it must be called before the process changes that itself).
func sealedSinceExec() bool {
	v, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	return err == nil && v != 1 // 1: SUID_DUMP_USER, open to this user
}

// relayKey says whether this relay is sealed and reads the key line the
// client answers with: nil for "-". A key sent to an exposed relay is
// refused (the client breaks the protocol; the key may be read already).
func relayKey(sealed bool) ([]byte, error) {
	state := "exposed"
	if sealed {
		state = "sealed"
	}
	if _, err := fmt.Fprintf(os.Stdout, "%s %s\n", relayMagic, state); err != nil {
		return nil, fmt.Errorf("key handshake: %w", err)
	}
	k, err := readLine(os.Stdin, 256)
	switch {
	case err != nil:
		return nil, fmt.Errorf("key on stdin: %w", err)
	case k == "-":
		return nil, nil
	case k == "":
		return nil, errors.New("key on stdin: empty line")
	case !sealed:
		return nil, errors.New("a key was sent to a relay that other processes of this user could read: refused")
	}
	return []byte(k), nil
}

// uploadName matches the content-addressed name a backend gives the
// binary it installs: "pi-sandbox-shim-" and the first 16 hex digits of
// its SHA-256.
var uploadName = regexp.MustCompile(`^pi-sandbox-shim-([0-9a-f]{16})$`)

// nameHash is the build of an executable this process cannot read (an
// execute-only install): the hash prefix in its content-addressed name,
// "" for any other name.
func nameHash(exe string) string {
	m := uploadName.FindStringSubmatch(filepath.Base(exe))
	if m == nil {
		return ""
	}
	return m[1]
}
