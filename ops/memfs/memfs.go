package memfs

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"path"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// maxLinks is Linux's limit on symbolic links followed in one lookup.
const maxLinks = 40

type node struct {
	mode   fs.FileMode // type bits and permissions
	data   []byte      // regular file content (replaced, never mutated in place, except by writers)
	kids   map[string]*node
	target string // symbolic link target
	mtime  time.Time
	// gen, when set, produces the content of a generated file of size bytes
	// (large test files that are never held in memory).
	gen  func() io.ReadCloser
	size int64
}

func (n *node) isDir() bool  { return n.mode.IsDir() }
func (n *node) isLink() bool { return n.mode&fs.ModeSymlink != 0 }

// FS is an in-memory backend. The zero value is not usable; call New.
type FS struct {
	mu      sync.Mutex
	root    *node
	info    ops.Info
	mockErr func(op, name string) error
	runFunc func(ctx context.Context, cmd *ops.Cmd) error
}

var _ ops.Backend = (*FS)(nil)

// New returns a backend with /work as working directory, /home/user as home
// and /tmp/pi-spill as spill directory, all created.
func New() *FS {
	return NewWithInfo(ops.Info{
		Backend:  "memfs",
		WorkDir:  "/work",
		Home:     "/home/user",
		User:     "user",
		UID:      1000,
		GID:      1000,
		OS:       "linux",
		Arch:     runtime.GOARCH,
		Shell:    "/bin/sh",
		SpillDir: "/tmp/pi-spill",
	})
}

// NewWithInfo returns a backend reporting info; its WorkDir, Home and
// SpillDir are created when set, and its Shell as an executable placeholder
// file (commands run through the RunFunc, not through it), so that Info
// describes the tree as it does on a real target.
func NewWithInfo(info ops.Info) *FS {
	f := &FS{root: &node{mode: fs.ModeDir | 0o755, kids: map[string]*node{}, mtime: time.Now()}, info: info}
	for _, d := range []string{info.WorkDir, info.Home, info.SpillDir} {
		if d != "" {
			if err := f.AddDir(d, 0o755); err != nil {
				panic(err)
			}
		}
	}
	if info.Shell != "" {
		if err := f.AddFile(info.Shell, []byte("memfs: commands run through SetRunFunc\n"), 0o755); err != nil {
			panic(err)
		}
	}
	return f
}

// SetMockErr installs fn, called with the operation ("open", "openwriter",
// "stat", "lstat", "readdir", "writefile", "mkdirall", "realpath", "access",
// "remove", "run") and path (the command for "run") before each operation; a
// non-nil result is returned as the operation's error. nil removes it.
func (f *FS) SetMockErr(fn func(op, name string) error) {
	f.mu.Lock()
	f.mockErr = fn
	f.mu.Unlock()
}

// SetRunFunc makes Run call fn.
func (f *FS) SetRunFunc(fn func(ctx context.Context, cmd *ops.Cmd) error) {
	f.mu.Lock()
	f.runFunc = fn
	f.mu.Unlock()
}

func (f *FS) mock(op, name string) error {
	f.mu.Lock()
	fn := f.mockErr
	f.mu.Unlock()
	if fn != nil {
		return fn(op, name)
	}
	return nil
}

// Info implements ops.Backend.
func (f *FS) Info() ops.Info { return f.info }

// Close implements ops.Backend; it does nothing.
func (f *FS) Close() error { return nil }

// Run implements ops.Runner through the RunFunc, or fails.
func (f *FS) Run(ctx context.Context, cmd *ops.Cmd) error {
	if err := f.mock("run", cmd.Command); err != nil {
		return err
	}
	f.mu.Lock()
	fn := f.runFunc
	f.mu.Unlock()
	if fn == nil {
		return &ops.StartError{Err: errUnsupportedRun}
	}
	return fn(ctx, cmd)
}

var errUnsupportedRun = &unsupported{"memfs: commands are not supported"}

type unsupported struct{ msg string }

func (u *unsupported) Error() string { return u.msg }
func (u *unsupported) Unwrap() error { return ops.ErrUnsupported }

// lookup is the result of resolving a path.
type lookup struct {
	n      *node  // the node, nil when missing
	real   string // its real path (for a missing last element: real parent + name)
	parent *node  // the real parent directory (nil for "/")
	base   string // the last element's name
}

// resolve walks name from the root. followLast says whether a symbolic link
// in the last element is followed. A missing last element (whose parent
// exists) is not an error: l.n is nil. The caller holds f.mu.
func (f *FS) resolve(op, name string, followLast bool) (lookup, error) {
	if !path.IsAbs(name) {
		return lookup{}, ops.PathError(op, name, ops.EINVAL)
	}
	comps := split(name)
	cur, curPath := f.root, "/"
	links := 0
	for i := 0; i < len(comps); i++ {
		c := comps[i]
		if !cur.isDir() {
			return lookup{}, ops.PathError(op, name, ops.ENOTDIR)
		}
		if cur.mode&0o100 == 0 {
			return lookup{}, ops.PathError(op, name, ops.EACCES)
		}
		if len(c) > 255 {
			return lookup{}, ops.PathError(op, name, ops.ENAMETOOLONG)
		}
		child := cur.kids[c]
		last := i == len(comps)-1
		if child == nil {
			if last {
				return lookup{real: path.Join(curPath, c), parent: cur, base: c}, nil
			}
			return lookup{}, ops.PathError(op, name, ops.ENOENT)
		}
		if child.isLink() && (!last || followLast) {
			links++
			if links > maxLinks {
				return lookup{}, ops.PathError(op, name, ops.ELOOP)
			}
			t := child.target
			if !path.IsAbs(t) {
				t = path.Join(curPath, t)
			}
			comps = append(split(t), comps[i+1:]...)
			cur, curPath, i = f.root, "/", -1
			continue
		}
		if last {
			return lookup{n: child, real: path.Join(curPath, c), parent: cur, base: c}, nil
		}
		cur, curPath = child, path.Join(curPath, c)
	}
	return lookup{n: cur, real: curPath}, nil
}

func split(p string) []string {
	p = path.Clean("/" + p)
	if p == "/" {
		return nil
	}
	return strings.Split(p[1:], "/")
}

// existing resolves name and requires it to exist.
func (f *FS) existing(op, name string, follow bool) (lookup, error) {
	l, err := f.resolve(op, name, follow)
	if err == nil && l.n == nil {
		err = ops.PathError(op, name, ops.ENOENT)
	}
	return l, err
}

// Open implements ops.FS.
func (f *FS) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	if err := f.mock("open", name); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	l, err := f.existing("open", name, true)
	if err != nil {
		return nil, err
	}
	switch {
	case l.n.isDir():
		return nil, ops.PathError("read", name, ops.EISDIR)
	case l.n.mode&0o400 == 0:
		return nil, ops.PathError("open", name, ops.EACCES)
	case l.n.gen != nil:
		return l.n.gen(), nil
	}
	return io.NopCloser(bytes.NewReader(l.n.data)), nil
}

// OpenWriter implements ops.FS.
func (f *FS) OpenWriter(ctx context.Context, name string, flag int, perm fs.FileMode) (io.WriteCloser, error) {
	if err := f.mock("openwriter", name); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	l, err := f.resolve("open", name, true)
	if err != nil {
		return nil, err
	}
	n := l.n
	switch {
	case n == nil && flag&os.O_CREATE == 0:
		return nil, ops.PathError("open", name, ops.ENOENT)
	case n != nil && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, ops.PathError("open", name, ops.EEXIST)
	case n != nil && n.isDir():
		return nil, ops.PathError("open", name, ops.EISDIR)
	case n != nil && n.mode&0o200 == 0:
		return nil, ops.PathError("open", name, ops.EACCES)
	case n == nil && l.parent.mode&0o200 == 0:
		return nil, ops.PathError("open", name, ops.EACCES)
	}
	if n == nil {
		n = &node{mode: perm.Perm(), mtime: time.Now()}
		l.parent.kids[l.base] = n
	}
	if flag&os.O_TRUNC != 0 {
		n.data = nil
	}
	return &writer{f: f, n: n, append: flag&os.O_APPEND != 0}, nil
}

type writer struct {
	f      *FS
	n      *node
	off    int
	append bool
	closed bool
}

func (w *writer) Write(p []byte) (int, error) {
	w.f.mu.Lock()
	defer w.f.mu.Unlock()
	if w.closed {
		return 0, fs.ErrClosed
	}
	if w.append {
		w.off = len(w.n.data)
	}
	if w.off == len(w.n.data) {
		// Appending never touches bytes an open reader can see.
		w.n.data = append(w.n.data, p...)
		w.off += len(p)
		w.n.mtime = time.Now()
		return len(p), nil
	}
	data := append([]byte(nil), w.n.data...)
	if end := w.off + len(p); end > len(data) {
		data = append(data, make([]byte, end-len(data))...)
	}
	copy(data[w.off:], p)
	w.off += len(p)
	w.n.data = data
	w.n.mtime = time.Now()
	return len(p), nil
}

func (w *writer) Close() error {
	w.f.mu.Lock()
	defer w.f.mu.Unlock()
	w.closed = true
	return nil
}

// Stat implements ops.FS.
func (f *FS) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	return f.stat(ctx, "stat", name, true)
}

// Lstat implements ops.FS.
func (f *FS) Lstat(ctx context.Context, name string) (fs.FileInfo, error) {
	return f.stat(ctx, "lstat", name, false)
}

func (f *FS) stat(ctx context.Context, op, name string, follow bool) (fs.FileInfo, error) {
	if err := f.mock(op, name); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	l, err := f.existing(op, name, follow)
	if err != nil {
		return nil, err
	}
	return infoOf(path.Base(l.real), l.n), nil
}

// ReadDir implements ops.FS.
func (f *FS) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	if err := f.mock("readdir", name); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	l, err := f.existing("scandir", name, true)
	if err != nil {
		return nil, err
	}
	if !l.n.isDir() {
		return nil, ops.PathError("scandir", name, ops.ENOTDIR)
	}
	if l.n.mode&0o400 == 0 {
		return nil, ops.PathError("scandir", name, ops.EACCES)
	}
	out := make([]fs.DirEntry, 0, len(l.n.kids))
	for k, n := range l.n.kids {
		out = append(out, fs.FileInfoToDirEntry(infoOf(k, n)))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// WriteFile implements ops.FS: the content is replaced at once, through
// symbolic links, keeping an existing file's mode.
func (f *FS) WriteFile(ctx context.Context, name string, data []byte, perm fs.FileMode) error {
	if err := f.mock("writefile", name); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	l, err := f.resolve("open", name, true)
	if err != nil {
		return err
	}
	switch {
	case l.n != nil && l.n.isDir():
		return ops.PathError("open", name, ops.EISDIR)
	case l.n != nil && l.n.mode&0o200 == 0:
		return ops.PathError("open", name, ops.EACCES)
	case l.n == nil && l.parent.mode&0o200 == 0:
		return ops.PathError("open", name, ops.EACCES)
	}
	mode := perm.Perm()
	if l.n != nil {
		mode = l.n.mode
	}
	l.parent.kids[l.base] = &node{mode: mode, data: bytes.Clone(data), mtime: time.Now()}
	return nil
}

// MkdirAll implements ops.FS.
func (f *FS) MkdirAll(ctx context.Context, name string, perm fs.FileMode) error {
	if err := f.mock("mkdirall", name); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mkdirAll(name, perm)
}

func (f *FS) mkdirAll(name string, perm fs.FileMode) error {
	if !path.IsAbs(name) {
		return ops.PathError("mkdir", name, ops.EINVAL)
	}
	p := "/"
	for _, c := range split(name) {
		p = path.Join(p, c)
		l, err := f.resolve("mkdir", p, true)
		if err != nil {
			return err
		}
		if l.n == nil {
			if l.parent.mode&0o200 == 0 {
				return ops.PathError("mkdir", name, ops.EACCES)
			}
			l.parent.kids[l.base] = &node{mode: fs.ModeDir | perm.Perm(), kids: map[string]*node{}, mtime: time.Now()}
			continue
		}
		if !l.n.isDir() {
			return ops.PathError("mkdir", name, ops.ENOTDIR)
		}
	}
	return nil
}

// RealPath implements ops.FS.
func (f *FS) RealPath(ctx context.Context, name string) (string, error) {
	if err := f.mock("realpath", name); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	l, err := f.resolve("realpath", name, true)
	if err != nil {
		return "", err
	}
	return l.real, nil
}

// Access implements ops.FS for the owner's permission bits.
func (f *FS) Access(ctx context.Context, name string, mode ops.AccessMode) error {
	if err := f.mock("access", name); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	l, err := f.existing("access", name, true)
	if err != nil {
		return err
	}
	perm := l.n.mode.Perm()
	if (mode&ops.AccessRead != 0 && perm&0o400 == 0) ||
		(mode&ops.AccessWrite != 0 && perm&0o200 == 0) ||
		(mode&ops.AccessExec != 0 && perm&0o100 == 0) {
		return ops.PathError("access", name, ops.EACCES)
	}
	return nil
}

// Remove implements ops.FS.
func (f *FS) Remove(ctx context.Context, name string) error {
	if err := f.mock("remove", name); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	l, err := f.existing("remove", name, false)
	if err != nil {
		return err
	}
	if l.parent == nil {
		return ops.PathError("remove", name, ops.EBUSY)
	}
	if l.n.isDir() && len(l.n.kids) > 0 {
		return ops.PathError("remove", name, ops.ENOTEMPTY)
	}
	delete(l.parent.kids, l.base)
	return nil
}
