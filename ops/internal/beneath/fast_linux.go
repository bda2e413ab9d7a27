//go:build linux

package beneath

import (
	"encoding/binary"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// openFast opens name in one openat2 call when it is plain names inside
// one root and flag only reads: from the deepest root holding it (no
// nested root lies on the way), refusing any link, "..", magic link or
// escape. Anything the kernel refuses, and every error, is left to the
// walk (ok false), which says exactly what went wrong or follows the links;
// a success is what the walk would have opened.
func (s *Set) openFast(name string, flag int) (*os.File, bool) {
	if noOpenat2.Load() || flag&(writeFlags|unix.O_EXCL|unix.O_PATH|unix.O_DIRECTORY) != 0 {
		return nil, false
	}
	if strings.IndexByte(name, 0) >= 0 || !path.IsAbs(name) {
		return nil, false
	}
	name = path.Clean(name)
	start, rest := s.startAt(split(name))
	if start.fd == s.top || len(rest) == 0 {
		return nil, false // outside every root, or a root itself
	}
	for _, c := range rest {
		if c == "." || c == ".." {
			return nil, false
		}
	}
	fd, err := unix.Openat2(start.fd, strings.Join(rest, "/"), &unix.OpenHow{
		Flags:   uint64(flag | unix.O_NOFOLLOW | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		if err == syscall.ENOSYS || err == syscall.EPERM {
			noOpenat2.Store(true)
		}
		return nil, false
	}
	return os.NewFile(uintptr(fd), name), true
}

// ReadDirTypes lists the directory name sorted by name, like ReadDir, but
// with each entry's type as the listing gives it (no stat of each entry;
// fstatat on the directory's fd only where the file system does not say).
// An entry's Info is an Lstat of it through the set, when called. It is
// for walks that look at types only (a search).
func (s *Set) ReadDirTypes(name string) ([]fs.DirEntry, error) {
	fd, name, err := s.openDir(name)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var es []fs.DirEntry
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, pathErr("scandir", name, err)
		}
		if n <= 0 {
			break
		}
		for b := buf[:n]; len(b) >= direntNameOff; {
			reclen := int(binary.NativeEndian.Uint16(b[direntReclenOff:]))
			if reclen < direntNameOff || reclen > len(b) {
				return nil, pathErr("scandir", name, syscall.EIO)
			}
			raw := b[direntNameOff:reclen]
			if i := slices.Index(raw, 0); i >= 0 {
				raw = raw[:i]
			}
			typ := b[direntTypeOff]
			b = b[reclen:]
			entry := string(raw)
			if entry == "." || entry == ".." {
				continue
			}
			mode, ok := direntMode(typ)
			if !ok {
				var st unix.Stat_t
				if err := unix.Fstatat(fd, entry, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
					if err == syscall.ENOENT {
						continue // removed since it was listed
					}
					return nil, pathErr("scandir", name, err)
				}
				mode = fileMode(st.Mode).Type()
			}
			es = append(es, typedEntry{s: s, dir: name, name: entry, typ: mode})
		}
	}
	slices.SortFunc(es, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return es, nil
}

// The layout of struct linux_dirent64.
const (
	direntReclenOff = int(unsafe.Offsetof(unix.Dirent{}.Reclen))
	direntTypeOff   = int(unsafe.Offsetof(unix.Dirent{}.Type))
	direntNameOff   = int(unsafe.Offsetof(unix.Dirent{}.Name))
)

// direntMode is the type of a d_type; false for DT_UNKNOWN.
func direntMode(t byte) (fs.FileMode, bool) {
	switch t {
	case unix.DT_REG:
		return 0, true
	case unix.DT_DIR:
		return fs.ModeDir, true
	case unix.DT_LNK:
		return fs.ModeSymlink, true
	case unix.DT_FIFO:
		return fs.ModeNamedPipe, true
	case unix.DT_SOCK:
		return fs.ModeSocket, true
	case unix.DT_CHR:
		return fs.ModeDevice | fs.ModeCharDevice, true
	case unix.DT_BLK:
		return fs.ModeDevice, true
	}
	return 0, false
}

// typedEntry is an entry of ReadDirTypes.
type typedEntry struct {
	s         *Set
	dir, name string
	typ       fs.FileMode
}

func (e typedEntry) Name() string      { return e.name }
func (e typedEntry) IsDir() bool       { return e.typ.IsDir() }
func (e typedEntry) Type() fs.FileMode { return e.typ }
func (e typedEntry) Info() (fs.FileInfo, error) {
	return e.s.Lstat(path.Join(e.dir, e.name))
}
func (e typedEntry) String() string { return fs.FormatDirEntry(e) }
