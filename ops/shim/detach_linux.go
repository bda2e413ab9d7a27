package shim

import (
	"fmt"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// hasChildren reports whether the shim still has a child (an orphan of
// the command, re-parented to the subreaper). The reaper closes empty once
// it finds none, which can come a moment after the command's own status:
// until then the kernel is asked (waitid without waiting or reaping), so
// a command that left nothing behind never costs the /proc walk.
func hasChildren(empty <-chan struct{}) bool {
	select {
	case <-empty:
		return false
	default:
	}
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		return err != unix.ECHILD
	}
}

// detachTree keeps the processes a command left running: the shim tells
// its caller ("detached", after the "exited" line), closes its stdout and
// stderr so the call ends, copies the tree's output to logfile (at most
// capBytes, then a note), and stays their owner until none is left, or a
// kill request (a signal, or the lifeline ending) sweeps them all.
func detachTree(diag func(string, ...any), cp *copier, pr *os.File, copyDone <-chan error, copyOpen bool, empty <-chan struct{}, sigs <-chan os.Signal, lost <-chan struct{}, logfile string, capBytes int64, status syscall.WaitStatus, pidfile string, closeCall func()) int {
	log, err := os.OpenFile(logfile, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW, 0o600)
	var w io.Writer = io.Discard
	if err == nil {
		defer log.Close()
		w = &cappedWriter{w: log, left: capBytes}
	} else {
		diag("warning: background log %s: %v", logfile, err)
	}
	cp.mu.Lock()
	if cp.farewell != "" {
		io.WriteString(cp.w, cp.farewell)
	}
	cp.w = w
	cp.mu.Unlock()
	diag("detached %d", os.Getpid())
	// The call is over: its pipes close (the caller reads EOF on both).
	closeCall()
	diag = func(string, ...any) {}
	select {
	case <-empty: // every process ended by itself
	case <-sigs:
		killDescendants(os.Getpid(), killLimit)
	case <-lost:
		killDescendants(os.Getpid(), killLimit)
	}
	if copyOpen {
		cp.drain(copyDone, pr)
	}
	if pidfile != "" {
		os.Remove(pidfile)
	}
	return exitStatus(status)
}

// cappedWriter writes up to left bytes, then one note, then drops the rest
// (never failing, so the copy keeps draining the pipe).
type cappedWriter struct {
	w     io.Writer
	left  int64
	noted bool
}

func (c *cappedWriter) Write(p []byte) (int, error) {
	n := len(p)
	if c.left <= 0 {
		if !c.noted {
			c.noted = true
			fmt.Fprintf(c.w, "\n[pi-sandbox: log cap reached; further output is dropped]\n")
		}
		return n, nil
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	k, _ := c.w.Write(p)
	c.left -= int64(k)
	return n, nil
}

// watchLifeline reports when fd reaches end of input: the helper that holds
// its write end is gone. fd < 0: never.
func watchLifeline(fd int) <-chan struct{} {
	ch := make(chan struct{})
	if fd < 0 {
		return ch
	}
	unix.CloseOnExec(fd)
	f := os.NewFile(uintptr(fd), "lifeline")
	go func() {
		var b [1]byte
		for {
			if _, err := f.Read(b[:]); err != nil {
				close(ch)
				return
			}
		}
	}()
	return ch
}
