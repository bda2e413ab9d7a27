package native

import (
	"os"

	"golang.org/x/sys/unix"
)

// pending reports whether bytes wait in the pipe (TIOCINQ is FIONREAD): a
// starved reader goroutine must not make a busy command look idle.
func (p *pump) pending() bool {
	n := 0
	if rc, err := p.r.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) })
	}
	return n > 0
}

// pumpBuf is the pump's read size, pipeSize the capacity asked of an output
// pipe: a fast command's output moves in few large reads and writes (on a
// VM the cost is per wakeup, not per byte). 256 KiB stays far below the
// per-user pipe budget (pipe-user-pages-soft) with many commands running.
const (
	pumpBuf  = 256 << 10
	pipeSize = 256 << 10
)

// growPipe asks for a larger pipe; a refusal keeps the default.
func growPipe(f *os.File) {
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { _, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, pipeSize) })
	}
}
