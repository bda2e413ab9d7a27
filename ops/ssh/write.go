package sshops

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"os"
	"path"

	"github.com/pkg/sftp"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// WriteFile replaces name atomically: the real path is resolved, the data is
// written to a temporary file in the same directory, synced when the server
// offers fsync@openssh.com, and renamed over the real path with
// posix-rename@openssh.com (a plain SFTP rename refuses an existing target on
// OpenSSH). An existing file keeps its mode and, when the user may set it,
// its owner; one the user may not write is refused (EACCES), as pi's write
// is. When no temp file can be made (a read-only directory) or the rename
// fails onto an existing file (a bind-mounted single file) the data is
// written in place.
func (b fallback) WriteFile(ctx context.Context, name string, data []byte, perm fs.FileMode) error {
	return b.do(ctx, func(sc *sftp.Client, c *conn) error {
		if _, ok := sc.HasExtension("posix-rename@openssh.com"); !ok {
			return &fs.PathError{Op: "open", Path: name, Err: errNoPosixRename}
		}
		real, err := b.realPath(sc, c, name, 0)
		if err != nil {
			if pe, ok := err.(*fs.PathError); ok {
				pe.Op, pe.Path = "open", name
			}
			return err
		}
		mode := perm.Perm()
		old, err := sc.Stat(real)
		switch {
		case err == nil && old.IsDir():
			return ops.PathError("open", name, ops.EISDIR)
		case err == nil:
			// A rename would replace a file the user may not write, where
			// pi's in-place write fails.
			if !b.permits(old, ops.AccessWrite) {
				return ops.PathError("open", name, ops.EACCES)
			}
			mode = old.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
		case fxCode(err) != fxNoSuchFile || isTransport(err, c):
			return b.pathErr("open", name, err, c, sc, hintCreate)
		}
		tmp := path.Join(path.Dir(real), "."+path.Base(real)+".pi-sandbox-"+randHex(6)+".tmp")
		f, err := sc.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
		if err != nil {
			if old != nil && fxCode(err) == fxPermissionDenied && !isTransport(err, c) {
				// A writable file in a directory the user may not write:
				// no temp file, but pi's in-place write works.
				return b.writeInPlace(sc, c, name, real, data)
			}
			// Report the user's path: the temp file is ours.
			return b.pathErr("open", name, err, c, sc, hintCreate)
		}
		committed := false
		defer func() {
			if !committed {
				sc.Remove(tmp)
			}
		}()
		if err := writeAll(f, data); err != nil {
			f.Close()
			return b.pathErr("write", name, err, c, sc, hintCreate)
		}
		if err := f.Chmod(mode); err != nil {
			f.Close()
			return b.pathErr("chmod", name, err, c, sc, hintCreate)
		}
		if old != nil {
			if st, ok := old.Sys().(*sftp.FileStat); ok && (b.info.UID == 0 || int(st.UID) == b.info.UID) {
				f.Chown(int(st.UID), int(st.GID)) // best effort, like cp -p
			}
		}
		if err := f.Sync(); err != nil && fxCode(err) != fxOpUnsupported {
			f.Close()
			return b.pathErr("fsync", name, err, c, sc, hintCreate)
		}
		if err := f.Close(); err != nil {
			return b.pathErr("close", name, err, c, sc, hintCreate)
		}
		err = sc.PosixRename(tmp, real)
		if err == nil {
			committed = true
			return nil
		}
		if isTransport(err, c) || old == nil || fxCode(err) != fxFailure {
			return b.pathErr("rename", name, err, c, sc, hintCreate)
		}
		// EBUSY/EXDEV (a bind-mounted file) arrive as a bare failure: write
		// in place, which is not atomic but is what the mount allows.
		return b.writeInPlace(sc, c, name, real, data)
	})
}

func (b *Backend) writeInPlace(sc *sftp.Client, c *conn, name, real string, data []byte) error {
	f, err := sc.OpenFile(real, os.O_WRONLY|os.O_TRUNC)
	if err != nil {
		return b.pathErr("open", name, err, c, sc, hintCreate)
	}
	if err := writeAll(f, data); err != nil {
		f.Close()
		return b.pathErr("write", name, err, c, sc, hintCreate)
	}
	if err := f.Sync(); err != nil && fxCode(err) != fxOpUnsupported {
		f.Close()
		return b.pathErr("fsync", name, err, c, sc, hintCreate)
	}
	return b.pathErr("close", name, f.Close(), c, sc, hintCreate)
}

// writeAll writes data with the client's concurrent writes: one Write of the
// whole buffer is split into packets sent in parallel.
func writeAll(f *sftp.File, data []byte) error {
	if len(data) == 0 {
		return nil
	}
	_, err := f.Write(data)
	return err
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
