package native

import "golang.org/x/sys/unix"

// pending reports whether bytes wait in the pipe (TIOCINQ is FIONREAD): a
// starved reader goroutine must not make a busy command look idle.
func (p *pump) pending() bool {
	n := 0
	if rc, err := p.r.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) })
	}
	return n > 0
}
