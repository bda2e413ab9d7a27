//go:build linux

package beneath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

func pathErr(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: name, Err: err}
}

const writeFlags = unix.O_WRONLY | unix.O_RDWR | unix.O_CREAT | unix.O_TRUNC | unix.O_APPEND

// OpenFile opens name as os.OpenFile would, beneath the roots. It follows a
// final link unless flag has O_NOFOLLOW, or O_CREATE|O_EXCL (which never
// follows one: a link there is EEXIST). Write flags need a writable root.
func (s *Set) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	if f, ok := s.openFast(name, flag); ok {
		return f, nil
	}
	w, err := s.walk("open", name)
	if err != nil {
		return nil, err
	}
	defer w.close()
	write := flag&writeFlags != 0
	excl := flag&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL
	follow := flag&unix.O_NOFOLLOW == 0 && !excl
	for {
		f, ent, _, err := w.resolve(follow, write)
		if err != nil {
			return nil, w.fail("open", err, write)
		}
		if ent >= 0 {
			unix.Close(ent)
		}
		var fd int
		if f.base == "" {
			fd, err = unix.Openat(f.dir, ".", flag|unix.O_CLOEXEC, sysMode(perm))
		} else {
			fd, err = unix.Openat(f.dir, f.base, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, sysMode(perm))
		}
		if err == syscall.ELOOP && follow && w.retry() {
			continue // it became a link since resolve looked
		}
		if err != nil {
			return nil, pathErr("open", w.name, err)
		}
		return os.NewFile(uintptr(fd), w.name), nil
	}
}

func (s *Set) stat(op, name string, follow bool) (fs.FileInfo, error) {
	w, err := s.walk(op, name)
	if err != nil {
		return nil, err
	}
	defer w.close()
	_, ent, st, err := w.resolve(follow, false)
	if err != nil {
		return nil, w.fail(op, err, false)
	}
	if ent < 0 {
		return nil, pathErr(op, w.name, syscall.ENOENT)
	}
	unix.Close(ent)
	return newInfo(path.Base(w.name), st), nil
}

// Stat stats name, following links.
func (s *Set) Stat(name string) (fs.FileInfo, error) { return s.stat("stat", name, true) }

// Lstat stats name without following a final link; it is judged by where
// the link itself is.
func (s *Set) Lstat(name string) (fs.FileInfo, error) { return s.stat("lstat", name, false) }

// ReadDir lists the directory name sorted by name. Entries are stated
// (without following links) through the directory's fd when listed.
func (s *Set) ReadDir(name string) ([]fs.DirEntry, error) {
	fd, name, err := s.openDir(name)
	if err != nil {
		return nil, err
	}
	d := os.NewFile(uintptr(fd), name)
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, pathErr("scandir", name, errnoOf(err))
	}
	es := make([]fs.DirEntry, 0, len(names))
	for _, n := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if err == syscall.ENOENT {
				continue // removed since it was listed
			}
			return nil, pathErr("scandir", name, err)
		}
		es = append(es, dirEntry{newInfo(n, &st)})
	}
	slices.SortFunc(es, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return es, nil
}

// openDir opens the directory name for listing: the walk resolves it, then
// the very directory it found is reopened for reading. name comes back
// cleaned, for errors.
func (s *Set) openDir(name string) (int, string, error) {
	w, err := s.walk("scandir", name)
	if err != nil {
		return -1, name, err
	}
	defer w.close()
	_, ent, _, err := w.resolve(true, false)
	if err != nil {
		return -1, w.name, w.fail("scandir", err, false)
	}
	if ent < 0 {
		return -1, w.name, pathErr("scandir", w.name, syscall.ENOENT)
	}
	fd, err := unix.Openat(ent, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	unix.Close(ent)
	if err != nil {
		return -1, w.name, pathErr("scandir", w.name, err)
	}
	return fd, w.name, nil
}

// errnoOf unwraps the syscall.Errno of an os error.
func errnoOf(err error) error {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return err
}

// RealPath returns where name leads, links followed. The last element may
// be missing (a dangling final link leads to its target's location); a
// missing parent is ENOENT. The result is a path: using it later is a check
// then a use again, so do file work with the other methods (give them the
// name, not the real path).
func (s *Set) RealPath(name string) (string, error) {
	w, err := s.walk("realpath", name)
	if err != nil {
		return "", err
	}
	defer w.close()
	f, ent, _, err := w.resolve(true, false)
	if err != nil {
		return "", w.fail("realpath", err, false)
	}
	if ent >= 0 {
		unix.Close(ent)
	}
	return f.real, nil
}

// Access checks that name exists and allows mode (access(2) bits: 4 read,
// 2 write, 1 execute; 0 existence) for the real user. The write bit needs a
// writable root.
func (s *Set) Access(name string, mode uint32) error {
	w, err := s.walk("access", name)
	if err != nil {
		return err
	}
	defer w.close()
	write := mode&unix.W_OK != 0
	_, ent, _, err := w.resolve(true, write)
	if err != nil {
		return w.fail("access", err, write)
	}
	if ent < 0 {
		return pathErr("access", w.name, syscall.ENOENT)
	}
	defer unix.Close(ent)
	if mode == 0 {
		return nil
	}
	err = unix.Faccessat2(ent, "", mode, unix.AT_EMPTY_PATH)
	if err == syscall.ENOSYS {
		// Before Linux 5.8: the magic link of the fd is the file itself.
		err = unix.Access(fmt.Sprintf("/proc/self/fd/%d", ent), mode)
	}
	if err != nil {
		return pathErr("access", w.name, err)
	}
	return nil
}

// Remove removes a file, link or empty directory; a final link is not
// followed. Removing a root itself is EBUSY.
func (s *Set) Remove(name string) error {
	w, err := s.walk("unlink", name)
	if err != nil {
		return err
	}
	defer w.close()
	f, ent, _, err := w.resolve(false, true)
	if err != nil {
		return w.fail("unlink", err, true)
	}
	if ent < 0 {
		return pathErr("unlink", w.name, syscall.ENOENT)
	}
	unix.Close(ent)
	if f.base == "" {
		return pathErr("unlink", w.name, syscall.EBUSY)
	}
	// As os.Remove: unlink, then rmdir; rmdir's error unless it is ENOTDIR.
	e := unix.Unlinkat(f.dir, f.base, 0)
	if e == nil {
		return nil
	}
	e1 := unix.Unlinkat(f.dir, f.base, unix.AT_REMOVEDIR)
	if e1 == nil {
		return nil
	}
	if e1 != syscall.ENOTDIR {
		e = e1
	}
	return pathErr("unlink", w.name, e)
}

// MkdirAll creates name and its missing parents, as os.MkdirAll: it
// succeeds when name is a directory (through links), and never creates the
// target of a dangling link (EEXIST, as mkdir -p).
func (s *Set) MkdirAll(name string, perm fs.FileMode) error {
	w, err := s.walk("mkdir", name)
	if err != nil {
		return err
	}
	defer func() { w.close() }()
	for tries := len(w.comps) + maxLinks; ; tries-- {
		if tries < 0 {
			return pathErr("mkdir", w.name, syscall.ELOOP)
		}
		f, ent, st, err := w.resolve(true, true)
		var sk *stuck
		switch {
		case errors.As(err, &sk) && sk.errno == syscall.ENOENT:
			if jerr := s.judge(w.name, sk.real, true); jerr != nil {
				return jerr
			}
			if jerr := s.judge(w.name, path.Join(w.cur.real, sk.elem), true); jerr != nil {
				return jerr // where the directory would be made
			}
			if sk.inLink {
				return pathErr("mkdir", sk.at, syscall.EEXIST)
			}
			if err := unix.Mkdirat(w.cur.fd, sk.elem, sysMode(perm)); err != nil && err != syscall.EEXIST {
				return pathErr("mkdir", sk.at, err)
			}
		case err != nil:
			return w.fail("mkdir", err, true)
		case ent >= 0:
			unix.Close(ent)
			if st.Mode&unix.S_IFMT != unix.S_IFDIR {
				return pathErr("mkdir", w.name, syscall.ENOTDIR)
			}
			return nil
		case !w.finalIsOwn():
			return pathErr("mkdir", w.name, syscall.EEXIST) // a dangling link
		default:
			err := unix.Mkdirat(f.dir, f.base, sysMode(perm))
			if err == nil {
				return nil
			}
			if err != syscall.EEXIST {
				return pathErr("mkdir", w.name, err)
			}
		}
		// Made a parent, or lost a race: walk again.
		w.close()
		if w, err = s.walk("mkdir", name); err != nil {
			return err
		}
	}
}
