package shim

import "golang.org/x/sys/unix"

// closePinOnExec keeps PinFD from the processes this one starts when it is
// a descriptor of this process's own binary (what PinScript's caller left
// open): commands have no use for it.
func closePinOnExec() {
	var fd, self unix.Stat_t
	if unix.Fstat(PinFD, &fd) != nil || unix.Stat(selfExe, &self) != nil {
		return
	}
	if fd.Dev == self.Dev && fd.Ino == self.Ino {
		unix.CloseOnExec(PinFD)
	}
}
