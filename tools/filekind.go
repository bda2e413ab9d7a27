package tools

import (
	"context"
	"errors"
	"io/fs"
	"sync"
	"time"
)

// The file tools work on regular files only: reading a FIFO,
// /dev/zero or /dev/urandom never ends, and pi reads nothing else usefully.
// Directories keep pi's own errors (EISDIR).

// irregularKind names fi's kind when it is neither a regular file nor a
// directory ("a named pipe"), else "".
func irregularKind(fi fs.FileInfo) string {
	m := fi.Mode()
	switch {
	case m.IsRegular(), m.IsDir():
		return ""
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "not a regular file"
}

// errNotRegular is the error of a file tool called on a special file.
func errNotRegular(tool, path, kind string) error {
	var msg string
	switch tool {
	case "read":
		msg = "Cannot read " + path + ": it is " + kind + ", not a regular file. The read tool reads regular files only; use bash to read from a pipe or device (e.g. head -c 4096 " + path + ")."
	case "edit":
		msg = "Could not edit file: " + path + ". It is " + kind + ", not a regular file; edit changes regular files only."
	case "grep":
		msg = "Cannot search " + path + ": it is " + kind + ", not a regular file or a directory. The grep tool searches files and directories only; use bash to read from a pipe or device."
	default:
		msg = "Could not write " + path + ": it is " + kind + ", not a regular file. The write tool replaces regular files only; use bash to write to a pipe or device."
	}
	return textErr(msg, errors.New("tools: "+tool+": "+path+" is "+kind))
}

// settleGrace is how long a write that must settle (pi's abort contract:
// an edit or write under way when the abort comes still lands) may go on
// after the call was aborted.
const settleGrace = 10 * time.Second

// errSettleGrace ends a write that outlived settleGrace after its abort.
var errSettleGrace = errors.New("tools: write still under way " + settleGrace.String() + " after the abort")

// settleCtx is the context of a write that must settle: it is not canceled
// with ctx, but ends settleGrace after ctx is done, so a stuck backend
// cannot hold the file's mutation queue forever. Call stop when done.
func settleCtx(ctx context.Context) (c context.Context, stop func()) {
	c, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	var (
		mu    sync.Mutex
		timer *time.Timer
		done  bool
	)
	unhook := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			timer = time.AfterFunc(settleGrace, func() { cancel(errSettleGrace) })
		}
	})
	return c, func() {
		unhook()
		mu.Lock()
		done = true
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		cancel(nil)
	}
}
