//go:build linux

package beneath

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// keptBits are the mode bits an overwrite preserves.
const keptBits = 0o7777

// WriteFileAtomic replaces name with data atomically, as ops.FS.WriteFile:
// the real path is resolved (through links; a dangling final link creates
// its target), and in that directory's fd an exclusive temp file with an
// unpredictable name gets the data, the mode (and, as root, the owner) of
// an existing file, an fsync, and is renamed onto the name (the directory
// is not synced: after a power cut the name holds the old content or the
// new, whole; a second fsync per write would double its cost). A new file gets
// perm minus the umask. Where the directory is not writable (EACCES, EPERM,
// EROFS) or the rename cannot work (EBUSY, EXDEV: a bind-mounted file), the
// file is written in place instead. A nil data writes an empty file.
func (s *Set) WriteFileAtomic(name string, data io.Reader, perm fs.FileMode) error {
	if data == nil {
		data = eofReader{}
	}
	w, err := s.walk("open", name)
	if err != nil {
		return err
	}
	defer w.close()
	f, ent, st, err := w.resolve(true, true)
	if err != nil {
		return w.fail("open", err, true)
	}
	if f.base == "" {
		if ent >= 0 {
			unix.Close(ent)
		}
		return pathErr("open", w.name, syscall.EISDIR)
	}
	mode, uid, gid, exists := sysMode(perm), -1, -1, ent >= 0
	if exists {
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			unix.Close(ent)
			return pathErr("open", w.name, syscall.EISDIR)
		}
		// The rename would replace a file we may not write to; an in-place
		// write fails there with EACCES, so check as open(2) would.
		err := unix.Faccessat2(ent, "", unix.W_OK, unix.AT_EMPTY_PATH)
		unix.Close(ent)
		if err != nil && err != syscall.ENOSYS {
			return pathErr("open", w.name, err)
		}
		mode = st.Mode & keptBits
		if os.Geteuid() == 0 {
			uid, gid = int(st.Uid), int(st.Gid)
		}
	}

	tmpMode := mode
	if exists {
		tmpMode = 0o600 // until fchmod below: mode may not allow our write
	}
	var tmp string
	var tfd int
	for i := 0; ; i++ {
		tmp = "." + f.base + ".pi-tmp-" + randomHex()
		tfd, err = unix.Openat(f.dir, tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, tmpMode)
		if err != syscall.EEXIST || i == 9 {
			break
		}
	}
	switch err {
	case nil:
	case syscall.EACCES, syscall.EPERM, syscall.EROFS:
		// The directory is not writable but the file may be.
		return writeInPlace(w.name, f, data, mode)
	default:
		return pathErr("open", w.name, err)
	}
	tf := os.NewFile(uintptr(tfd), tmp)
	fail := func(op string, err error) error {
		tf.Close()
		unix.Unlinkat(f.dir, tmp, 0)
		return pathErr(op, w.name, errnoOf(err))
	}
	if _, err := io.Copy(tf, data); err != nil {
		return fail("write", err)
	}
	if uid >= 0 {
		_ = tf.Chown(uid, gid) // best effort; the mode below still applies
	}
	if exists { // after Chown: chown clears setuid/setgid
		if err := unix.Fchmod(tfd, mode); err != nil {
			return fail("chmod", err)
		}
	}
	if err := tf.Sync(); err != nil {
		return fail("fsync", err)
	}
	if err := unix.Renameat(f.dir, tmp, f.dir, f.base); err != nil {
		if err == syscall.EBUSY || err == syscall.EXDEV {
			if _, serr := tf.Seek(0, io.SeekStart); serr != nil {
				return fail("write", serr)
			}
			werr := writeInPlace(w.name, f, tf, mode)
			tf.Close()
			unix.Unlinkat(f.dir, tmp, 0)
			return werr
		}
		return fail("rename", err)
	}
	if err := tf.Close(); err != nil {
		return pathErr("close", w.name, errnoOf(err))
	}
	return nil
}

// writeInPlace is the non-atomic fallback; the final element is not
// followed if it became a link.
func writeInPlace(name string, f final, data io.Reader, mode uint32) error {
	fd, err := unix.Openat(f.dir, f.base, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	if err != nil {
		return pathErr("open", name, err)
	}
	out := os.NewFile(uintptr(fd), name)
	if _, err := io.Copy(out, data); err != nil {
		out.Close()
		return pathErr("write", name, errnoOf(err))
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return pathErr("fsync", name, errnoOf(err))
	}
	if err := out.Close(); err != nil {
		return pathErr("close", name, errnoOf(err))
	}
	return nil
}

func randomHex() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }
