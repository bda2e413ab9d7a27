package native

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// keptBits are the mode bits an overwrite preserves.
const keptBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// WriteFile replaces name atomically (see ops.FS.WriteFile): the real path
// is resolved, data goes to a temp file in the same directory, which is
// synced and renamed onto the real path. A new file gets perm minus the
// umask. As root, an overwritten file also keeps its owner.
func (b *Backend) WriteFile(ctx context.Context, name string, data []byte, perm fs.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	real, err := realPath(name, 0)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			pe.Op = "open"
			pe.Path = name
		}
		return err
	}
	mode := perm.Perm() &^ b.umask
	uid, gid := -1, -1
	fi, err := os.Stat(real)
	switch {
	case err == nil && fi.IsDir():
		return ops.PathError("open", name, ops.EISDIR)
	case err == nil:
		// The rename would replace a file we may not write to; pi's in-place
		// write fails there with EACCES, so check as open(2) would.
		if err := unix.Access(real, unix.W_OK); err != nil {
			return mapErr("open", name, err)
		}
		mode = fi.Mode() & keptBits
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 {
			uid, gid = int(st.Uid), int(st.Gid)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return mapErr("open", name, err)
	}

	dir, base := filepath.Split(real)
	tmp, err := os.CreateTemp(dir, "."+base+".pi-tmp-*")
	if err != nil {
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
			// The directory is not writable but the file may be: pi writes
			// in place, so do that rather than fail.
			return b.writeInPlace(name, real, data, mode)
		}
		return mapErr("open", name, err)
	}
	tmpName := tmp.Name()
	fail := func(op string, err error) error {
		tmp.Close()
		os.Remove(tmpName)
		return mapErr(op, name, err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fail("write", err)
	}
	if uid >= 0 {
		_ = tmp.Chown(uid, gid) // best effort; mode below still applies
	}
	// Chmod after Chown: chown clears setuid/setgid bits.
	if err := tmp.Chmod(mode); err != nil {
		return fail("chmod", err)
	}
	if err := tmp.Sync(); err != nil {
		return fail("fsync", err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmpName)
		return mapErr("close", name, err)
	}
	if err := os.Rename(tmpName, real); err != nil {
		os.Remove(tmpName)
		if errors.Is(err, syscall.EBUSY) || errors.Is(err, syscall.EXDEV) {
			return b.writeInPlace(name, real, data, mode)
		}
		return mapErr("rename", name, err)
	}
	// The directory is not synced (as beneath.WriteFileAtomic): after a
	// power cut the name holds the old content or the new, whole.
	return nil
}

// writeInPlace is the non-atomic fallback (a bind-mounted single file, a
// read-only directory holding a writable file).
func (b *Backend) writeInPlace(name, real string, data []byte, mode fs.FileMode) error {
	f, err := os.OpenFile(real, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return mapErr("open", name, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return mapErr("write", name, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return mapErr("fsync", name, err)
	}
	return mapErr("close", name, f.Close())
}
