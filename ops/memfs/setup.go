package memfs

import (
	"bytes"
	"io"
	"io/fs"
	"path"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// AddDir creates name and its parents (like mkdir -p) with perm.
func (f *FS) AddDir(name string, perm fs.FileMode) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mkdirAll(name, perm)
}

// AddFile creates or replaces the file name with data and perm, creating
// its parents.
func (f *FS) AddFile(name string, data []byte, perm fs.FileMode) error {
	return f.add(name, &node{mode: perm.Perm(), data: bytes.Clone(data)})
}

// AddSymlink creates newname as a symbolic link to oldname.
func (f *FS) AddSymlink(oldname, newname string) error {
	return f.add(newname, &node{mode: fs.ModeSymlink | 0o777, target: oldname})
}

// AddGenerated creates a file of size bytes whose content open produces on
// every Open; it is never held in memory.
func (f *FS) AddGenerated(name string, size int64, open func() io.ReadCloser) error {
	return f.add(name, &node{mode: 0o644, gen: open, size: size})
}

func (f *FS) add(name string, n *node) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.mkdirAll(path.Dir(name), 0o755); err != nil {
		return err
	}
	l, err := f.resolve("open", name, false)
	if err != nil {
		return err
	}
	if l.n != nil && l.n.isDir() {
		return ops.PathError("open", name, ops.EISDIR)
	}
	n.mtime = time.Now()
	l.parent.kids[l.base] = n
	return nil
}

// Chmod sets the permission bits of name (following symbolic links).
func (f *FS) Chmod(name string, perm fs.FileMode) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, err := f.existing("chmod", name, true)
	if err != nil {
		return err
	}
	l.n.mode = l.n.mode.Type() | perm.Perm()
	return nil
}

// Contents returns the content of the regular file name (following
// symbolic links), for assertions.
func (f *FS) Contents(name string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, err := f.existing("open", name, true)
	if err != nil {
		return nil, err
	}
	if l.n.isDir() {
		return nil, ops.PathError("read", name, ops.EISDIR)
	}
	return bytes.Clone(l.n.data), nil
}

// fileInfo is a snapshot of a node.
type fileInfo struct {
	name  string
	size  int64
	mode  fs.FileMode
	mtime time.Time
}

func infoOf(name string, n *node) fileInfo {
	size := int64(len(n.data))
	switch {
	case n.gen != nil:
		size = n.size
	case n.isLink():
		size = int64(len(n.target))
	case n.isDir():
		size = 4096
	}
	if name == "" {
		name = "/"
	}
	return fileInfo{name: name, size: size, mode: n.mode, mtime: n.mtime}
}

func (i fileInfo) Name() string       { return i.name }
func (i fileInfo) Size() int64        { return i.size }
func (i fileInfo) Mode() fs.FileMode  { return i.mode }
func (i fileInfo) ModTime() time.Time { return i.mtime }
func (i fileInfo) IsDir() bool        { return i.mode.IsDir() }
func (i fileInfo) Sys() any           { return nil }
