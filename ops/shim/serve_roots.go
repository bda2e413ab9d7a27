package shim

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/beneath"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/native"
)

// rootSet is a registered set of confinement roots and the file system
// confined to them: every path is resolved beneath the roots' directory
// descriptors and used in the same step (package beneath), so a symbolic
// link swapped between a check and the use cannot lead outside.
type rootSet struct {
	roots []ops.Root
	fs    ops.FS
	close func()
}

func openRootSet(b *native.Backend, roots []ops.Root) (*rootSet, error) {
	// Read-only roots first: one nested in a writable root (a read-only
	// directory inside the workdir) decides for what lies in it.
	rs := make([]beneath.Root, 0, len(roots))
	for _, r := range roots {
		rs = append(rs, beneath.Root{Path: r.Path, ReadOnly: r.ReadOnly})
	}
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].ReadOnly && !rs[j].ReadOnly })
	set, err := beneath.Open(rs)
	if err != nil {
		return nil, mapBeneath(err)
	}
	// The roots as the client gave them (in its order), resolved.
	resolved := make([]ops.Root, 0, len(roots))
	for _, r := range roots {
		p, err := set.RealPath(r.Path)
		if err != nil {
			p = r.Path
		}
		resolved = append(resolved, ops.Root{Path: p, ReadOnly: r.ReadOnly})
	}
	c := &confinedFS{set: set, b: b, opened: rs}
	for _, r := range set.Roots() {
		fi, err := os.Stat(r.Path)
		if err != nil {
			set.Close()
			return nil, mapBeneath(&fs.PathError{Op: "stat", Path: r.Path, Err: unwrapErrno(err)})
		}
		c.ids = append(c.ids, rootID{path: r.Path, fi: fi})
	}
	return &rootSet{roots: resolved, fs: c, close: func() { c.close() }}, nil
}

// rootID is what a root's path named when the set was opened.
type rootID struct {
	path string
	fi   fs.FileInfo
}

// mapBeneath turns the package's errors into the ops vocabulary: errno
// codes, and refusals as *ops.OutsideRootError (the client fills in the
// roots).
func mapBeneath(err error) error {
	if err == nil {
		return nil
	}
	var oe *beneath.OutsideError
	if errors.As(err, &oe) {
		return &fs.PathError{Op: "confine", Path: oe.Path, Err: &ops.OutsideRootError{Path: oe.Path, Resolved: oe.Resolved, Write: oe.Write}}
	}
	var pe *fs.PathError
	var se syscall.Errno
	if errors.As(err, &pe) && errors.As(err, &se) {
		if se == syscall.ENOENT && ops.NameTooLong(pe.Path) {
			se = syscall.ENAMETOOLONG // fuse-overlayfs answers ENOENT
		}
		return ops.PathError(pe.Op, pe.Path, native.ErrnoCode(se))
	}
	return err
}

// confinedFS is ops.FS over a beneath.Set, with the native backend's
// semantics (Node's op names, atomic writes, EISDIR on reading a
// directory).
type confinedFS struct {
	b      *native.Backend
	opened []beneath.Root

	mu  sync.Mutex
	set *beneath.Set
	ids []rootID
}

func (c *confinedFS) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set.Close()
}

// current returns the set, after checking that the roots name what they
// named when it was opened: the set holds directory descriptors, which would
// keep serving a root that was removed (a deleted working directory must
// not look alive) or replaced (reopened on the new one).
func (c *confinedFS) current(op, name string) (*beneath.Set, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range c.ids {
		if name != id.path && !strings.HasPrefix(name, strings.TrimSuffix(id.path, "/")+"/") {
			continue
		}
		fi, err := os.Stat(id.path)
		if err != nil {
			return nil, mapBeneath(&fs.PathError{Op: op, Path: name, Err: unwrapErrno(err)})
		}
		if !os.SameFile(fi, id.fi) {
			set, err := beneath.Open(c.opened)
			if err != nil {
				return nil, mapBeneath(err)
			}
			c.set.Close()
			c.set = set
			c.ids = c.ids[:0]
			for _, r := range set.Roots() {
				if fi, err := os.Stat(r.Path); err == nil {
					c.ids = append(c.ids, rootID{path: r.Path, fi: fi})
				}
			}
		}
		break
	}
	return c.set, nil
}

var _ ops.FS = (*confinedFS)(nil)

func (c *confinedFS) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	set, err := c.current("open", name)
	if err != nil {
		return nil, err
	}
	return openIn(set, name)
}

// openIn opens name for reading in set.
func openIn(set *beneath.Set, name string) (io.ReadCloser, error) {
	f, err := set.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, mapBeneath(err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, mapBeneath(&fs.PathError{Op: "open", Path: name, Err: err})
	}
	if fi.IsDir() {
		f.Close()
		return nil, ops.PathError("read", name, ops.EISDIR)
	}
	return &osReader{f: f, name: name}, nil
}

// openRegular is the read tool's access, stat and open of a regular file
// under one check of the roots, when access asks at most for reading (an
// open for reading that works proves it). ok is false for anything else
// and on any failure: the caller then takes the steps one by one, for
// their exact error.
func (c *confinedFS) openRegular(ctx context.Context, name string, mode ops.AccessMode) (fs.FileInfo, io.ReadCloser, bool) {
	if ctx.Err() != nil || mode&^ops.AccessRead != 0 {
		return nil, nil, false
	}
	set, err := c.current("open", name)
	if err != nil {
		return nil, nil, false
	}
	fi, err := set.Stat(name)
	if err != nil || !fi.Mode().IsRegular() {
		return nil, nil, false
	}
	r, err := openIn(set, name)
	if err != nil {
		return nil, nil, false
	}
	return fi, r, true
}

type osReader struct {
	f    *os.File
	name string
}

func (r *osReader) Read(p []byte) (int, error) {
	n, err := r.f.Read(p)
	if err != nil && err != io.EOF {
		err = mapBeneath(&fs.PathError{Op: "read", Path: r.name, Err: unwrapErrno(err)})
	}
	return n, err
}

func (r *osReader) Close() error { return r.f.Close() }

func unwrapErrno(err error) error {
	var se syscall.Errno
	if errors.As(err, &se) {
		return se
	}
	return err
}

func (c *confinedFS) OpenWriter(ctx context.Context, name string, flag int, perm fs.FileMode) (io.WriteCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	set, err := c.current("open", name)
	if err != nil {
		return nil, err
	}
	flag &= os.O_CREATE | os.O_EXCL | os.O_TRUNC | os.O_APPEND
	f, err := set.OpenFile(name, flag|os.O_WRONLY, perm)
	if err != nil {
		return nil, mapBeneath(err)
	}
	return &osWriter{f: f, name: name}, nil
}

type osWriter struct {
	f    *os.File
	name string
}

func (w *osWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		err = mapBeneath(&fs.PathError{Op: "write", Path: w.name, Err: unwrapErrno(err)})
	}
	return n, err
}

// closeNoSync closes without an fsync (a spill file, see serve_spill.go).
func (w *osWriter) closeNoSync() error {
	if err := w.f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return mapBeneath(&fs.PathError{Op: "close", Path: w.name, Err: unwrapErrno(err)})
	}
	return nil
}

func (w *osWriter) Close() error {
	serr := w.f.Sync()
	cerr := w.f.Close()
	if errors.Is(cerr, os.ErrClosed) {
		return nil
	}
	if serr != nil && !errors.Is(serr, os.ErrClosed) {
		return mapBeneath(&fs.PathError{Op: "fsync", Path: w.name, Err: unwrapErrno(serr)})
	}
	if cerr != nil {
		return mapBeneath(&fs.PathError{Op: "close", Path: w.name, Err: unwrapErrno(cerr)})
	}
	return nil
}

func (c *confinedFS) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	set, err := c.current("stat", name)
	if err != nil {
		return nil, err
	}
	fi, err := set.Stat(name)
	return fi, mapBeneath(err)
}

func (c *confinedFS) Lstat(ctx context.Context, name string) (fs.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	set, err := c.current("lstat", name)
	if err != nil {
		return nil, err
	}
	fi, err := set.Lstat(name)
	return fi, mapBeneath(err)
}

func (c *confinedFS) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	set, err := c.current("scandir", name)
	if err != nil {
		return nil, err
	}
	es, err := set.ReadDir(name)
	return es, mapBeneath(err)
}

func (c *confinedFS) WriteFile(ctx context.Context, name string, data []byte, perm fs.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	set, err := c.current("open", name)
	if err != nil {
		return err
	}
	if fi, err := set.Stat(name); err == nil && fi.IsDir() {
		return ops.PathError("open", name, ops.EISDIR)
	}
	return mapBeneath(set.WriteFileAtomic(name, bytes.NewReader(data), perm))
}

func (c *confinedFS) MkdirAll(ctx context.Context, name string, perm fs.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	set, err := c.current("mkdir", name)
	if err != nil {
		return err
	}
	return mapBeneath(set.MkdirAll(name, perm))
}

func (c *confinedFS) RealPath(ctx context.Context, name string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	set, err := c.current("realpath", name)
	if err != nil {
		return "", err
	}
	p, err := set.RealPath(name)
	return p, mapBeneath(err)
}

func (c *confinedFS) Access(ctx context.Context, name string, mode ops.AccessMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	set, err := c.current("access", name)
	if err != nil {
		return err
	}
	return mapBeneath(set.Access(name, uint32(mode)))
}

func (c *confinedFS) Remove(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	set, err := c.current("unlink", name)
	if err != nil {
		return err
	}
	return mapBeneath(set.Remove(name))
}

// pinnedFS is a confinedFS for one search: the roots are checked once, when
// it starts (current), not at each of its thousands of opens, and
// directories are listed with the entries' types only (what a walk needs).
type pinnedFS struct {
	*confinedFS
	set *beneath.Set
}

// pin returns c for one search of name.
func (c *confinedFS) pin(name string) (*pinnedFS, error) {
	set, err := c.current("scandir", name)
	if err != nil {
		return nil, err
	}
	return &pinnedFS{confinedFS: c, set: set}, nil
}

func (p *pinnedFS) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return openIn(p.set, name)
}

func (p *pinnedFS) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fi, err := p.set.Stat(name)
	return fi, mapBeneath(err)
}

func (p *pinnedFS) Lstat(ctx context.Context, name string) (fs.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fi, err := p.set.Lstat(name)
	return fi, mapBeneath(err)
}

func (p *pinnedFS) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	es, err := p.set.ReadDir(name)
	return es, mapBeneath(err)
}

// ReadDirTypes lists name with its entries' types only (see package
// search); an entry's Info is a stat through the roots, when called.
func (p *pinnedFS) ReadDirTypes(ctx context.Context, name string) ([]fs.DirEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	es, err := p.set.ReadDirTypes(name)
	if err != nil {
		return nil, mapBeneath(err)
	}
	for i, e := range es {
		es[i] = mappedEntry{e}
	}
	return es, nil
}

// mappedEntry maps the error of its Info to the ops vocabulary.
type mappedEntry struct{ fs.DirEntry }

func (e mappedEntry) Info() (fs.FileInfo, error) {
	fi, err := e.DirEntry.Info()
	return fi, mapBeneath(err)
}
