package sandbox

import (
	"io"
	"net"

	"golang.org/x/sys/unix"
)

const canSplice = true

// spliceChunk is the most moved through the pipe at once.
const spliceChunk = 1 << 20

// spliceN moves n bytes from src to dst through a pipe, in the kernel,
// waiting on each socket through Go's poller. It returns the bytes moved.
func spliceN(dst *net.UnixConn, src *net.TCPConn, n int64) (int64, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return 0, err
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	unix.FcntlInt(uintptr(p[1]), unix.F_SETPIPE_SZ, spliceChunk)
	rc, err := src.SyscallConn()
	if err != nil {
		return 0, err
	}
	wc, err := dst.SyscallConn()
	if err != nil {
		return 0, err
	}
	var done int64
	for done < n {
		// The pipe is empty here: an EAGAIN is the socket's.
		var in int64
		var serr error
		if err := rc.Read(func(fd uintptr) bool {
			in, serr = unix.Splice(int(fd), nil, p[1], nil, int(min(n-done, spliceChunk)), unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
			return serr != unix.EAGAIN
		}); err != nil {
			return done, err
		}
		if serr != nil {
			return done, serr
		}
		if in == 0 {
			return done, io.ErrUnexpectedEOF
		}
		for in > 0 {
			var out int64
			var werr error
			if err := wc.Write(func(fd uintptr) bool {
				out, werr = unix.Splice(p[0], nil, int(fd), nil, int(in), unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
				return werr != unix.EAGAIN
			}); err != nil {
				return done, err
			}
			if werr != nil {
				return done, werr
			}
			in -= out
			done += out
		}
	}
	return done, nil
}
