//go:build unix

package search

import (
	"io"
	"io/fs"
	"syscall"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// openRead opens a file for reading with plain system calls: an *os.File would
// cost two more per file (the poller's registration and a flags query),
// which a search over thousands of small files feels.
func openRead(name string) (io.ReadCloser, error) {
	var (
		fd  int
		err error
	)
	for {
		fd, err = syscall.Open(name, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, mapErr(&fs.PathError{Op: "open", Path: name, Err: err})
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err == nil && st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		syscall.Close(fd)
		return nil, ops.PathError("read", name, ops.EISDIR)
	}
	return &fdReader{fd: fd, name: name}, nil
}

// fdReader reads a file descriptor with read(2).
type fdReader struct {
	fd   int
	name string
}

func (f *fdReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, err := syscall.Read(f.fd, p)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return 0, mapErr(&fs.PathError{Op: "read", Path: f.name, Err: err})
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (f *fdReader) Close() error { return syscall.Close(f.fd) }
