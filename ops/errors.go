package ops

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"time"
)

// Errno is an errno-style code ("ENOENT") carried inside a *fs.PathError.
// Its Error method returns Node's description of the code, so a PathError
// formats as "open /x: no such file or directory".
type Errno string

// The codes every backend maps its failures to.
const (
	ENOENT       Errno = "ENOENT"
	EACCES       Errno = "EACCES"
	EPERM        Errno = "EPERM"
	EISDIR       Errno = "EISDIR"
	ENOTDIR      Errno = "ENOTDIR"
	EROFS        Errno = "EROFS"
	ENOSPC       Errno = "ENOSPC"
	EEXIST       Errno = "EEXIST"
	ELOOP        Errno = "ELOOP"
	ENAMETOOLONG Errno = "ENAMETOOLONG"
	ENOTEMPTY    Errno = "ENOTEMPTY"
	EBUSY        Errno = "EBUSY"
	EXDEV        Errno = "EXDEV"
	EINVAL       Errno = "EINVAL"
	EIO          Errno = "EIO"
	EMFILE       Errno = "EMFILE"
	ENFILE       Errno = "ENFILE"
)

var descriptions = map[Errno]string{
	ENOENT:       "no such file or directory",
	EACCES:       "permission denied",
	EPERM:        "operation not permitted",
	EISDIR:       "illegal operation on a directory",
	ENOTDIR:      "not a directory",
	EROFS:        "read-only file system",
	ENOSPC:       "no space left on device",
	EEXIST:       "file already exists",
	ELOOP:        "too many symbolic links encountered",
	ENAMETOOLONG: "name too long",
	ENOTEMPTY:    "directory not empty",
	EBUSY:        "resource busy or locked",
	EXDEV:        "cross-device link not permitted",
	EINVAL:       "invalid argument",
	EIO:          "i/o error",
	EMFILE:       "too many open files",
	ENFILE:       "file table overflow",
}

// Error returns Node's description of the code ("no such file or directory").
func (e Errno) Error() string {
	if d, ok := descriptions[e]; ok {
		return d
	}
	return string(e)
}

// Code returns the code itself ("ENOENT").
func (e Errno) Code() string { return string(e) }

// Is makes an Errno satisfy the io/fs sentinels.
func (e Errno) Is(target error) bool {
	switch target {
	case fs.ErrNotExist:
		return e == ENOENT
	case fs.ErrPermission:
		return e == EACCES || e == EPERM
	case fs.ErrExist:
		return e == EEXIST || e == ENOTEMPTY
	case fs.ErrInvalid:
		return e == EINVAL
	}
	return false
}

// PathError returns a *fs.PathError for op on path with code.
func PathError(op, path string, code Errno) *fs.PathError {
	return &fs.PathError{Op: op, Path: path, Err: code}
}

// ErrnoOf returns the code carried by err: an Errno in its chain, a
// syscall.Errno mapped by name, or the code of an io/fs sentinel. It returns
// "" when err carries none.
func ErrnoOf(err error) Errno {
	if err == nil {
		return ""
	}
	var e Errno
	if errors.As(err, &e) {
		return e
	}
	var se syscall.Errno
	if errors.As(err, &se) {
		if c := FromSyscall(se); c != "" {
			return c
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ENOENT
	case errors.Is(err, fs.ErrPermission):
		return EACCES
	case errors.Is(err, fs.ErrExist):
		return EEXIST
	}
	return ""
}

// FromSyscall maps a syscall.Errno to its code, or "" when it has none here.
func FromSyscall(e syscall.Errno) Errno {
	switch e {
	case syscall.ENOENT:
		return ENOENT
	case syscall.EACCES:
		return EACCES
	case syscall.EPERM:
		return EPERM
	case syscall.EISDIR:
		return EISDIR
	case syscall.ENOTDIR:
		return ENOTDIR
	case syscall.EROFS:
		return EROFS
	case syscall.ENOSPC:
		return ENOSPC
	case syscall.EEXIST:
		return EEXIST
	case syscall.ELOOP:
		return ELOOP
	case syscall.ENAMETOOLONG:
		return ENAMETOOLONG
	case syscall.ENOTEMPTY:
		return ENOTEMPTY
	case syscall.EBUSY:
		return EBUSY
	case syscall.EXDEV:
		return EXDEV
	case syscall.EINVAL:
		return EINVAL
	case syscall.EIO:
		return EIO
	case syscall.EMFILE:
		return EMFILE
	case syscall.ENFILE:
		return ENFILE
	}
	return ""
}

// ErrTransport marks failures of the way to the target (engine unreachable,
// connection lost), as opposed to failures in the target.
var ErrTransport = errors.New("ops: transport failure")

// ErrConfig marks a configuration the target refuses or cannot serve (an
// image that is not there, a missing mount source, an unknown user, a
// paused or stopped container): the fix is in the configuration, and the
// error's text says what the target reported and what to change.
var ErrConfig = errors.New("ops: configuration refused")

// ConfigError formats an error that satisfies errors.Is(err, ErrConfig)
// without adding ErrConfig's text to its own; %w verbs wrap as in
// fmt.Errorf.
func ConfigError(format string, a ...any) error {
	return &configError{fmt.Errorf(format, a...)}
}

type configError struct{ err error }

func (e *configError) Error() string   { return e.err.Error() }
func (e *configError) Unwrap() []error { return []error{e.err, ErrConfig} }

// ErrCanceled marks a Run stopped because its context was done; the error
// also wraps context.Cause(ctx).
var ErrCanceled = errors.New("ops: command canceled")

// ErrExitUnknown marks a command whose exit status was lost.
var ErrExitUnknown = errors.New("ops: exit status unknown")

// ErrProcessLimit marks a command that could not start because no process
// could be forked for it (EAGAIN: a pids limit or RLIMIT_NPROC reached); it
// comes wrapped in a *StartError. Its text is what the model reads.
var ErrProcessLimit = errors.New("could not fork: process limit reached")

// ErrUnsupported is returned by capability helpers when a backend lacks the
// capability and there is no honest fallback.
var ErrUnsupported = errors.New("ops: unsupported")

// ErrBadPattern marks an invalid grep regular expression or find glob.
var ErrBadPattern = errors.New("ops: invalid pattern")

// Canceled returns the error Run reports when ctx was done: it wraps both
// ErrCanceled and context.Cause(ctx).
func Canceled(ctx context.Context) error {
	return fmt.Errorf("%w: %w", ErrCanceled, context.Cause(ctx))
}

// OOMNote ends the output of a command that exited 0 while the target's
// OOM killer ended one of its processes: a success can carry it nowhere
// else.
const OOMNote = "\n[pi-sandbox: a process of this command was killed: out of memory]\n"

// ExitError reports a command that ran and exited with a non-zero status.
type ExitError struct {
	Code      int  // exit status; 128+Signal for a signal death
	Signal    int  // the signal that killed the shell, 0 if it exited
	OOMKilled bool // killed by the kernel's out-of-memory killer
}

func (e *ExitError) Error() string {
	switch {
	case e.OOMKilled:
		return fmt.Sprintf("ops: killed: out of memory (exit status %d)", e.Code)
	case e.Signal != 0:
		return fmt.Sprintf("ops: killed by signal %d (exit status %d)", e.Signal, e.Code)
	}
	return fmt.Sprintf("ops: exit status %d", e.Code)
}

// StartError reports a command that could not start: a missing working
// directory, a missing shell, a failed exec.
type StartError struct {
	Err error
}

func (e *StartError) Error() string { return "ops: could not start: " + e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// TimeoutError reports a command stopped because Cmd.Timeout passed.
type TimeoutError struct {
	Limit time.Duration
	// ShellExited is true when the shell itself had exited before the
	// deadline and only processes it started kept the output open.
	ShellExited bool
	// ShellExitCode and ShellRuntime describe that exit.
	ShellExitCode int
	ShellRuntime  time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("ops: command timed out after %s", e.Limit)
}

// Is makes a TimeoutError match context.DeadlineExceeded.
func (e *TimeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// NameMax is the longest file name element Linux file systems allow.
const NameMax = 255

// NameTooLong reports whether an element of the slash-separated path p is
// longer than NameMax bytes.
func NameTooLong(p string) bool {
	n := 0
	for i := 0; i < len(p); i++ {
		if p[i] == '/' {
			n = 0
			continue
		}
		if n++; n > NameMax {
			return true
		}
	}
	return false
}
