package native

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// mapErr turns an os error into a *fs.PathError wrapping an ops.Errno, with
// op and path as the caller names them. Errors without an errno (a canceled
// context) are returned as they are.
func mapErr(op, path string, err error) error {
	if err == nil {
		return nil
	}
	var se syscall.Errno
	if errors.As(err, &se) {
		if se == syscall.ENOENT && ops.NameTooLong(path) {
			// Some file systems (fuse-overlayfs) answer ENOENT for a name
			// over NAME_MAX; the kernel's answer elsewhere is this.
			se = syscall.ENAMETOOLONG
		}
		return ops.PathError(op, path, ErrnoCode(se))
	}
	if c := ops.ErrnoOf(err); c != "" {
		return ops.PathError(op, path, c)
	}
	return err
}

// ErrnoCode is ops.FromSyscall's code for e, else its name ("EPROTO"),
// else EIO: a failure keeps what it was.
func ErrnoCode(e syscall.Errno) ops.Errno {
	if c := ops.FromSyscall(e); c != "" {
		return c
	}
	if name := unix.ErrnoName(e); name != "" {
		return ops.Errno(name)
	}
	return ops.EIO
}

// Open opens name for reading. A directory is EISDIR (Op "read"), as in Node.
func (b *Backend) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, mapErr("open", name, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, mapErr("open", name, err)
	}
	if fi.IsDir() {
		f.Close()
		return nil, ops.PathError("read", name, ops.EISDIR)
	}
	return &reader{f: f, name: name}, nil
}

type reader struct {
	f    *os.File
	name string
}

func (r *reader) Read(p []byte) (int, error) {
	n, err := r.f.Read(p)
	if err != nil && err != io.EOF {
		err = mapErr("read", r.name, err)
	}
	return n, err
}

func (r *reader) Close() error { return r.f.Close() }

// OpenWriter opens name for a streaming write; Close syncs before closing.
func (b *Backend) OpenWriter(ctx context.Context, name string, flag int, perm fs.FileMode) (io.WriteCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	flag &= os.O_CREATE | os.O_EXCL | os.O_TRUNC | os.O_APPEND
	f, err := os.OpenFile(name, flag|os.O_WRONLY, perm)
	if err != nil {
		return nil, mapErr("open", name, err)
	}
	return &writer{f: f, name: name}, nil
}

type writer struct {
	f    *os.File
	name string
}

func (w *writer) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	return n, mapErr("write", w.name, err)
}

func (w *writer) Close() error {
	serr := w.f.Sync()
	cerr := w.f.Close()
	if errors.Is(cerr, os.ErrClosed) {
		return nil // Close twice
	}
	if serr != nil && !errors.Is(serr, os.ErrClosed) {
		return mapErr("fsync", w.name, serr)
	}
	return mapErr("close", w.name, cerr)
}

// Stat follows symbolic links.
func (b *Backend) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fi, err := os.Stat(name)
	return fi, mapErr("stat", name, err)
}

// Lstat does not follow a final symbolic link.
func (b *Backend) Lstat(ctx context.Context, name string) (fs.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fi, err := os.Lstat(name)
	return fi, mapErr("lstat", name, err)
}

// ReadDir lists name sorted by file name.
func (b *Backend) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	es, err := os.ReadDir(name)
	if err != nil {
		return nil, mapErr("scandir", name, err)
	}
	return es, nil
}

// MkdirAll creates name and its missing parents.
func (b *Backend) MkdirAll(ctx context.Context, name string, perm fs.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.MkdirAll(name, perm); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return mapErr("mkdir", pe.Path, err)
		}
		return mapErr("mkdir", name, err)
	}
	return nil
}

// maxLinks bounds symbolic link resolution (Linux's MAXSYMLINKS).
const maxLinks = 40

// RealPath resolves symbolic links in name. A missing last element (or a
// dangling last symbolic link) resolves to its parent's real path joined with
// the name (or the link's target).
func (b *Backend) RealPath(ctx context.Context, name string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	p, err := realPath(name, 0)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		pe.Path = name // not the link target the recursion stopped at
	}
	return p, err
}

func realPath(name string, depth int) (string, error) {
	if depth > maxLinks {
		return "", ops.PathError("realpath", name, ops.ELOOP)
	}
	name = filepath.Clean(name)
	p, err := filepath.EvalSymlinks(name)
	if err == nil {
		return filepath.Abs(p)
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		// EvalSymlinks reports a loop as a plain error; let the kernel
		// name it (ELOOP, or whatever stat finds first).
		if _, serr := os.Stat(name); serr != nil {
			return "", mapErr("realpath", name, serr)
		}
		return "", ops.PathError("realpath", name, ops.ELOOP)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", mapErr("realpath", name, err)
	}
	if fi, lerr := os.Lstat(name); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
		target, rerr := os.Readlink(name)
		if rerr != nil {
			return "", mapErr("realpath", name, rerr)
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(name), target)
		}
		return realPath(target, depth+1)
	}
	dir, base := filepath.Split(name)
	if base == "" {
		return "", mapErr("realpath", name, err)
	}
	pdir, perr := filepath.EvalSymlinks(dir)
	if perr != nil {
		return "", mapErr("realpath", name, perr)
	}
	if fi, serr := os.Stat(pdir); serr == nil && !fi.IsDir() {
		return "", ops.PathError("realpath", name, ops.ENOTDIR)
	}
	pdir, perr = filepath.Abs(pdir)
	if perr != nil {
		return "", mapErr("realpath", name, perr)
	}
	return filepath.Join(pdir, base), nil
}

// Access checks mode with access(2) (real user ID).
func (b *Backend) Access(ctx context.Context, name string, mode ops.AccessMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return mapErr("access", name, unix.Access(name, uint32(mode)))
}

// Remove removes a file or an empty directory.
func (b *Backend) Remove(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return mapErr("unlink", name, os.Remove(name))
}

// CountLines counts "\n" bytes by streaming the file: it is local, so
// there is no transfer to save.
func (b *Backend) CountLines(ctx context.Context, name string) (newlines, size int64, err error) {
	return ops.CountLines(ctx, struct{ ops.FS }{b}, name)
}
