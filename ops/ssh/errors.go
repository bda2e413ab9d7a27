package sshops

import (
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path"
	"strings"

	"github.com/pkg/sftp"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// SFTP version 3 status codes (draft-ietf-secsh-filexfer-02).
const (
	fxNoSuchFile       = 2
	fxPermissionDenied = 3
	fxFailure          = 4
	fxBadMessage       = 5
	fxNoConnection     = 6
	fxConnectionLost   = 7
	fxOpUnsupported    = 8
)

// statvfs@openssh.com flag bit for a read-only file system.
const stRDOnly = 0x1

// fxCode returns the SFTP status code err carries, or 0.
func fxCode(err error) uint32 {
	var se *sftp.StatusError
	switch {
	case errors.As(err, &se):
		return se.Code
	case errors.Is(err, sftp.ErrSSHFxConnectionLost):
		return fxConnectionLost
	case errors.Is(err, os.ErrNotExist):
		return fxNoSuchFile
	case errors.Is(err, os.ErrPermission):
		return fxPermissionDenied
	}
	return 0
}

// isTransport reports whether err is the connection failing rather than the
// server answering.
func isTransport(err error, c *conn) bool {
	if c != nil && c.isDead() {
		return true
	}
	switch fxCode(err) {
	case fxConnectionLost, fxNoConnection:
		return true
	}
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.As(err, &ne)
}

// failHint says what the failed operation was, so that the generic
// SSH_FX_FAILURE (OpenSSH sends it for every errno it has no code for) can be
// narrowed down by looking at the file system.
type failHint int

const (
	hintNone   failHint = iota
	hintRead            // opening or reading an existing file
	hintCreate          // creating or writing a file
	hintExcl            // creating with O_EXCL
	hintMkdir           // making a directory
	hintRemove          // removing an entry
)

// pathErr turns an SFTP error into a *fs.PathError wrapping an ops.Errno,
// keeping op and name, or into a transport error.
func (b *Backend) pathErr(op, name string, err error, c *conn, sc *sftp.Client, hint failHint) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		if _, ok := pe.Err.(ops.Errno); ok {
			return pe
		}
	}
	if isTransport(err, c) {
		return b.pool.transportErr(op+" "+name, err)
	}
	var code ops.Errno
	switch fxCode(err) {
	case fxNoSuchFile:
		code = missingCause(sc, name)
	case fxPermissionDenied:
		code = ops.EACCES
	case fxBadMessage:
		code = ops.EINVAL
		if tooLong(name) {
			code = ops.ENAMETOOLONG
		}
	case fxFailure:
		code = failureCause(sc, name, hint)
	case fxOpUnsupported:
		code = ops.EINVAL
	default:
		code = ops.EIO
	}
	return ops.PathError(op, name, code)
}

// missingCause distinguishes the errnos OpenSSH folds into NO_SUCH_FILE:
// ENOENT, ENOTDIR and ELOOP.
func missingCause(sc *sftp.Client, name string) ops.Errno {
	if tooLong(name) {
		return ops.ENAMETOOLONG // OpenSSH reports it as "no such file"
	}
	if sc == nil {
		return ops.ENOENT
	}
	// A parent that exists but is not a directory makes ENOTDIR.
	for p := path.Dir(name); p != "/" && p != "."; p = path.Dir(p) {
		fi, err := sc.Stat(p)
		if err == nil {
			if !fi.IsDir() {
				return ops.ENOTDIR
			}
			break
		}
		if fxCode(err) != fxNoSuchFile {
			break
		}
	}
	// An existing non-directory where a directory was needed (opendir).
	if fi, err := sc.Stat(name); err == nil && !fi.IsDir() {
		return ops.ENOTDIR
	}
	// A symbolic link that exists but cannot be followed: dangling (ENOENT)
	// or a loop (ELOOP).
	if fi, err := sc.Lstat(name); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		cur := name
		for range 41 {
			fi, err := sc.Lstat(cur)
			if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
				return ops.ENOENT
			}
			t, err := sc.ReadLink(cur)
			if err != nil {
				return ops.ENOENT
			}
			if !path.IsAbs(t) {
				t = path.Join(path.Dir(cur), t)
			}
			cur = t
		}
		return ops.ELOOP
	}
	return ops.ENOENT
}

// failureCause narrows SSH_FX_FAILURE down from what the file system shows.
func failureCause(sc *sftp.Client, name string, hint failHint) ops.Errno {
	if sc == nil {
		return ops.EIO
	}
	if tooLong(name) {
		return ops.ENAMETOOLONG
	}
	fi, err := sc.Stat(name)
	exists := err == nil
	switch {
	case exists && fi.IsDir() && (hint == hintRead || hint == hintCreate):
		return ops.EISDIR
	case exists && (hint == hintExcl || hint == hintMkdir):
		return ops.EEXIST
	case exists && fi.IsDir() && hint == hintRemove:
		return ops.ENOTEMPTY
	}
	if pfi, err := sc.Stat(path.Dir(name)); err == nil && !pfi.IsDir() {
		return ops.ENOTDIR
	}
	dir := name
	if !exists {
		dir = path.Dir(name)
	}
	if vfs, err := sc.StatVFS(dir); err == nil {
		if vfs.Flag&stRDOnly != 0 {
			return ops.EROFS
		}
		if vfs.Bavail == 0 || vfs.Favail == 0 {
			return ops.ENOSPC
		}
	}
	return ops.EIO
}

func tooLong(name string) bool {
	if len(name) >= 4096 {
		return true
	}
	for _, el := range strings.Split(name, "/") {
		if len(el) > 255 {
			return true
		}
	}
	return false
}
