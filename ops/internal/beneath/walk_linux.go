//go:build linux

package beneath

import (
	"errors"
	"io/fs"
	"path"
	"strings"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxLinks bounds link resolution (Linux's MAXSYMLINKS); it also bounds the
// retries after an element turned into a link between two system calls.
const maxLinks = 40

// pos is a directory the walk has reached.
type pos struct {
	fd   int    // O_PATH fd (of a root when real is one)
	own  bool   // fd is the walk's to close (not a root's)
	file bool   // not a directory: "." and ".." below it are ENOTDIR
	real string // clean and link-free
}

// walker resolves one name element by element.
type walker struct {
	s        *Set
	name     string   // as the caller gave it, cleaned
	cur      pos      // the directory holding comps[0]
	comps    []string // elements still to walk; the last is the final one
	orig     int      // how many elements at the tail of comps are name's own
	prefix   string   // name's own elements walked so far
	lastOrig bool     // the element popped last was one of name's own
	links    int      // links followed, and retries after a race
}

// stuck reports an element before the last that is missing or not a
// directory: nothing below it can exist, so the location is lexical.
type stuck struct {
	errno  syscall.Errno
	real   string // where the name leads, lexically below the last real directory
	elem   string // the missing element, in the walker's cur
	inLink bool   // elem came from a link's target (a dangling link)
	at     string // name's prefix that was being resolved when elem was missed
}

func (e *stuck) Error() string { return e.errno.Error() }

func (s *Set) walk(op, name string) (*walker, error) {
	if strings.IndexByte(name, 0) >= 0 || !path.IsAbs(name) {
		return nil, &fs.PathError{Op: op, Path: name, Err: syscall.EINVAL}
	}
	name = path.Clean(name)
	w := &walker{s: s, name: name}
	w.cur, w.comps = s.startAt(split(name))
	w.orig = len(w.comps)
	w.prefix = w.cur.real
	return w, nil
}

func split(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}

func (w *walker) close() { w.setCur(pos{fd: -1}) }

func (w *walker) setCur(p pos) {
	if w.cur.own {
		unix.Close(w.cur.fd)
	}
	w.cur = p
}

func (w *walker) pop() string {
	c := w.comps[0]
	w.comps = w.comps[1:]
	w.lastOrig = len(w.comps) < w.orig
	if w.lastOrig {
		w.orig = len(w.comps)
		w.prefix = path.Join(w.prefix, c)
	}
	return c
}

// finalIsOwn reports whether the final element (comps[0], the only one
// left) is name's own rather than a link's target.
func (w *walker) finalIsOwn() bool { return w.orig == len(w.comps) }

// up goes to the parent of the current directory: its path is real, so its
// lexical parent is its parent, which the walk reaches again from "/" (never
// through an fd's "..").
func (w *walker) up() {
	p, rest := w.s.startAt(split(path.Dir(w.cur.real)))
	w.comps = append(rest, w.comps...)
	w.setCur(p)
}

// follow goes on with a link's target in place of the element just popped.
func (w *walker) follow(target string) error {
	w.links++
	if w.links > maxLinks {
		return syscall.ELOOP
	}
	if target == "" {
		return syscall.ENOENT
	}
	tc := split(target)
	if path.IsAbs(target) {
		var p pos
		p, tc = w.s.startAt(tc)
		w.setCur(p)
	}
	w.comps = append(tc, w.comps...)
	return nil
}

// retry accounts for one more attempt after a race; false when too many.
func (w *walker) retry() bool {
	w.links++
	return w.links <= maxLinks
}

// final is the last element of a walk: base in directory dir, or, when base
// is "", the directory dir itself.
type final struct {
	dir  int
	base string
	real string
}

// parent walks to the directory holding the final element, following every
// link before it. The final element stays in comps.
func (w *walker) parent() (final, error) {
	for {
		if len(w.comps) == 0 {
			return final{dir: w.cur.fd, real: w.cur.real}, nil
		}
		if len(w.comps) > 2 && !w.cur.file && w.fast() {
			continue
		}
		c := w.comps[0]
		if w.cur.file && (c == "." || c == "..") {
			w.pop()
			return final{}, w.stuck(c, syscall.ENOTDIR)
		}
		switch {
		case c == ".":
			w.pop()
			continue
		case c == "..":
			w.pop()
			w.up()
			continue
		case len(w.comps) == 1:
			real := path.Join(w.cur.real, c)
			if p, ok := w.s.rootAt(real); ok {
				w.pop()
				w.setCur(p)
				return final{dir: p.fd, real: real}, nil
			}
			return final{dir: w.cur.fd, base: c, real: real}, nil
		}
		w.pop()
		real := path.Join(w.cur.real, c)
		if p, ok := w.s.rootAt(real); ok {
			w.setCur(p) // a root is entered through its own fd
			continue
		}
		fd, st, err := lopen(w.cur.fd, c)
		if err != nil {
			return final{}, w.stuck(c, err)
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			target, err := readlink(fd)
			unix.Close(fd)
			if err != nil {
				return final{}, err
			}
			if err := w.follow(target); err != nil {
				return final{}, err
			}
			continue
		}
		w.setCur(pos{fd: fd, own: true, real: real, file: st.Mode&unix.S_IFMT != unix.S_IFDIR})
	}
}

// noOpenat2 is set once openat2 is found missing (Linux < 5.6, seccomp).
var noOpenat2 atomic.Bool

// fast walks every element but the last in one openat2 call that refuses
// any link, "..", magic link or escape from the current directory, when
// they are plain names inside one root. It reports whether it did; when it
// did not (a link on the way, a missing element, no openat2), the walk goes
// on element by element from where it was.
func (w *walker) fast() bool {
	if noOpenat2.Load() {
		return false
	}
	mid := w.comps[:len(w.comps)-1]
	for _, c := range mid {
		if c == "." || c == ".." {
			return false
		}
	}
	real := path.Join(w.cur.real, path.Join(mid...))
	for _, r := range w.s.roots {
		if r.Path != w.cur.real && within(r.Path, w.cur.real) && within(real, r.Path) {
			return false // a nested root on the way is entered through its fd
		}
	}
	fd, err := unix.Openat2(w.cur.fd, path.Join(mid...), &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		if err == syscall.ENOSYS || err == syscall.EPERM {
			noOpenat2.Store(true)
		}
		return false
	}
	for range mid {
		w.pop()
	}
	w.setCur(pos{fd: fd, own: true, real: real})
	return true
}

func (w *walker) stuck(c string, err error) error {
	errno, ok := err.(syscall.Errno)
	if !ok || errno != syscall.ENOENT && errno != syscall.ENOTDIR {
		return err
	}
	// Below a missing element nothing exists: a later ".." cannot lead
	// elsewhere, so the location stops before it.
	rest := []string{w.cur.real, c}
	for _, r := range w.comps {
		if r == ".." {
			break
		}
		rest = append(rest, r)
	}
	return &stuck{errno: errno, real: path.Join(rest...), elem: c, inLink: !w.lastOrig, at: w.prefix}
}

// resolve walks to the final element, following a final link when follow is
// set, and judges where it leads. ent is an O_PATH fd of the final element
// (the caller closes it) with its stat, or -1 when the element is missing
// (its parent exists). Errors are ready to return, except *stuck ones,
// which fail converts.
func (w *walker) resolve(follow, write bool) (f final, ent int, st *unix.Stat_t, err error) {
	for {
		f, err = w.parent()
		if err != nil {
			return f, -1, nil, err
		}
		var fd int
		if f.base == "" {
			fd, err = unix.FcntlInt(uintptr(f.dir), unix.F_DUPFD_CLOEXEC, 0)
			st = new(unix.Stat_t)
			if err != nil {
				fd = -1
			} else {
				err = unix.Fstat(fd, st)
			}
		} else {
			fd, st, err = lopen(f.dir, f.base)
		}
		if err != nil {
			if fd >= 0 {
				unix.Close(fd)
			}
			if err == syscall.ENOENT && f.base != "" {
				if jerr := w.s.judge(w.name, f.real, write); jerr != nil {
					return f, -1, nil, jerr
				}
				return f, -1, nil, nil
			}
			if jerr := w.s.judge(w.name, f.real, write); jerr != nil {
				return f, -1, nil, jerr
			}
			return f, -1, nil, err
		}
		if follow && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			target, err := readlink(fd)
			unix.Close(fd)
			if err != nil {
				return f, -1, nil, err
			}
			w.pop()
			if err := w.follow(target); err != nil {
				return f, -1, nil, err
			}
			continue
		}
		if err := w.s.judge(w.name, f.real, write); err != nil {
			unix.Close(fd)
			return f, -1, nil, err
		}
		return f, fd, st, nil
	}
}

// fail turns an error of the walk into the error op returns.
func (w *walker) fail(op string, err error, write bool) error {
	var st *stuck
	if errors.As(err, &st) {
		if jerr := w.s.judge(w.name, st.real, write); jerr != nil {
			return jerr
		}
		return &fs.PathError{Op: op, Path: w.name, Err: st.errno}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return err
	}
	return &fs.PathError{Op: op, Path: w.name, Err: err}
}

// lopen opens elem of dir without following it and stats it.
func lopen(dir int, elem string) (int, *unix.Stat_t, error) {
	fd, err := unix.Openat(dir, elem, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, nil, err
	}
	st := new(unix.Stat_t)
	if err := unix.Fstat(fd, st); err != nil {
		unix.Close(fd)
		return -1, nil, err
	}
	return fd, st, nil
}

// readlink reads the link opened as the O_PATH fd.
func readlink(fd int) (string, error) {
	for n := 256; ; n *= 2 {
		buf := make([]byte, n)
		m, err := unix.Readlinkat(fd, "", buf)
		if err != nil {
			return "", err
		}
		if m < n {
			return string(buf[:m]), nil
		}
		if n >= 1<<16 {
			return "", syscall.ENAMETOOLONG
		}
	}
}
