package search

import (
	"context"
	"io"
	"io/fs"
	"os"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// osFS is the read side of ops.FS over the os package: what the engine needs
// inside the shim (and in tests). Mutating methods fail with EROFS.
type osFS struct{}

var _ ops.FS = osFS{}

func mapErr(err error) error {
	if err == nil {
		return nil
	}
	if pe, ok := err.(*fs.PathError); ok {
		if code := ops.ErrnoOf(pe.Err); code != "" {
			return ops.PathError(pe.Op, pe.Path, code)
		}
	}
	return err
}

func (osFS) Open(_ context.Context, name string) (io.ReadCloser, error) {
	return openRead(name)
}

func (osFS) OpenWriter(_ context.Context, name string, _ int, _ fs.FileMode) (io.WriteCloser, error) {
	return nil, ops.PathError("open", name, ops.EROFS)
}

func (osFS) Stat(_ context.Context, name string) (fs.FileInfo, error) {
	st, err := os.Stat(name)
	return st, mapErr(err)
}

func (osFS) Lstat(_ context.Context, name string) (fs.FileInfo, error) {
	st, err := os.Lstat(name)
	return st, mapErr(err)
}

func (osFS) ReadDir(_ context.Context, name string) ([]fs.DirEntry, error) {
	es, err := os.ReadDir(name)
	return es, mapErr(err)
}

func (osFS) WriteFile(_ context.Context, name string, _ []byte, _ fs.FileMode) error {
	return ops.PathError("open", name, ops.EROFS)
}

func (osFS) MkdirAll(_ context.Context, name string, _ fs.FileMode) error {
	return ops.PathError("mkdir", name, ops.EROFS)
}

func (osFS) RealPath(_ context.Context, name string) (string, error) {
	return name, nil
}

func (osFS) Access(_ context.Context, name string, _ ops.AccessMode) error {
	_, err := os.Stat(name)
	return mapErr(err)
}

func (osFS) Remove(_ context.Context, name string) error {
	return ops.PathError("remove", name, ops.EROFS)
}
