//go:build !linux

package beneath

import (
	"errors"
	"io"
	"io/fs"
	"os"
)

// Set is a set of opened roots; only Linux has them.
type Set struct{}

// Open returns errors.ErrUnsupported outside Linux.
func Open(roots []Root) (*Set, error) { return nil, errors.ErrUnsupported }

func (s *Set) Roots() []Root { return nil }
func (s *Set) Close() error  { return nil }
func (s *Set) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return nil, errors.ErrUnsupported
}
func (s *Set) Stat(name string) (fs.FileInfo, error)      { return nil, errors.ErrUnsupported }
func (s *Set) Lstat(name string) (fs.FileInfo, error)     { return nil, errors.ErrUnsupported }
func (s *Set) ReadDir(name string) ([]fs.DirEntry, error) { return nil, errors.ErrUnsupported }
func (s *Set) RealPath(name string) (string, error)       { return "", errors.ErrUnsupported }
func (s *Set) Access(name string, mode uint32) error      { return errors.ErrUnsupported }
func (s *Set) Remove(name string) error                   { return errors.ErrUnsupported }
func (s *Set) MkdirAll(name string, perm fs.FileMode) error {
	return errors.ErrUnsupported
}
func (s *Set) WriteFileAtomic(name string, data io.Reader, perm fs.FileMode) error {
	return errors.ErrUnsupported
}

func (s *Set) ReadDirTypes(name string) ([]fs.DirEntry, error) { return nil, errors.ErrUnsupported }
