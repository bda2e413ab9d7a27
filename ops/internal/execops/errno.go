package execops

import (
	"errors"
	"io/fs"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// errnoMarker starts a line our file scripts print when they determine the
// code themselves.
const errnoMarker = "pi-sandbox-errno: "

// messages maps the strerror texts (glibc, musl) and the shells' own
// wordings (busybox ash: "nonexistent directory", "no such file"; dash:
// "Directory nonexistent", "No such file") to codes. The shells report
// ENOTDIR with the ENOENT wording; the scripts check directories themselves
// where that matters.
var messages = []struct {
	text string
	code ops.Errno
}{
	{"No such file or directory", ops.ENOENT},
	{"nonexistent directory", ops.ENOENT},
	{"Directory nonexistent", ops.ENOENT},
	{"no such file", ops.ENOENT},
	{"No such file", ops.ENOENT},
	{"Permission denied", ops.EACCES},
	{"Operation not permitted", ops.EPERM},
	{"Is a directory", ops.EISDIR},
	{"Not a directory", ops.ENOTDIR},
	{"Read-only file system", ops.EROFS},
	{"No space left on device", ops.ENOSPC},
	{"Disk quota exceeded", ops.ENOSPC},
	{"File exists", ops.EEXIST},
	{"Too many levels of symbolic links", ops.ELOOP},
	{"Symbolic link loop", ops.ELOOP},
	{"File name too long", ops.ENAMETOOLONG},
	{"Filename too long", ops.ENAMETOOLONG},
	{"Directory not empty", ops.ENOTEMPTY},
	{"Device or resource busy", ops.EBUSY},
	{"Resource busy", ops.EBUSY},
	{"Invalid cross-device link", ops.EXDEV},
	{"Cross-device link", ops.EXDEV},
	{"Invalid argument", ops.EINVAL},
	{"Too many open files in system", ops.ENFILE},
	{"Too many open files", ops.EMFILE},
	{"Input/output error", ops.EIO},
	{"I/O error", ops.EIO},
}

// errnoFromStderr returns the code a script's stderr carries: our marker
// first, else the first known message.
func errnoFromStderr(stderr string) ops.Errno {
	if i := strings.Index(stderr, errnoMarker); i >= 0 {
		rest := stderr[i+len(errnoMarker):]
		if j := strings.IndexAny(rest, " \n"); j >= 0 {
			rest = rest[:j]
		}
		return ops.Errno(rest)
	}
	for _, m := range messages {
		if strings.Contains(stderr, m.text) {
			return m.code
		}
	}
	return ""
}

// pathErr builds the *fs.PathError for a failed script: the mapped code,
// or the script's own words when nothing matches.
func (o *Ops) pathErr(op, name, stderr string) error {
	if code := errnoFromStderr(stderr); code != "" {
		return ops.PathError(op, name, code)
	}
	msg := strings.TrimSpace(stderr)
	if msg == "" {
		msg = "failed"
	}
	return &fs.PathError{Op: op, Path: name, Err: errors.New(o.cfg.Name + ": " + msg)}
}
