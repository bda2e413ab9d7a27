package tools

import (
	"context"
	"errors"

	"github.com/pi-sandbox/pi-sandbox/internal/growstack"
	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

// errAborted is the text pi's read, grep, find, ls, edit and write reject
// with when the call is aborted.
var errAborted = errors.New("Operation aborted")

// checkAbort returns errAborted once ctx is done.
func checkAbort(ctx context.Context) error {
	if ctx.Err() != nil {
		return errAborted
	}
	return nil
}

// abortable runs fn and returns its outcome, or "Operation aborted" as soon
// as ctx is done, without waiting for fn's I/O (pi rejects read, ls… on the
// abort signal while the work finishes in the background).
func abortable(ctx context.Context, fn func() (*loop.Result, error)) (*loop.Result, error) {
	type outcome struct {
		res *loop.Result
		err error
	}
	ch := make(chan outcome, 1)
	go func() {
		growstack.Grow() // a tool call runs deep: one stack copy, not three
		res, err := fn()
		ch <- outcome{res, err}
	}()
	select {
	case o := <-ch:
		if ctx.Err() != nil {
			return nil, errAborted
		}
		return o.res, o.err
	case <-ctx.Done():
		return nil, errAborted
	}
}

// nodeError formats a file error as Node does:
// "ENOENT: no such file or directory, access '/w/nope.txt'". The description
// comes from ops.Errno, one table for every backend. Transport failures and
// errors without a code keep their own message.
func nodeError(err error, syscall, path string) string {
	code, ok := errnoOf(err)
	if !ok {
		return err.Error()
	}
	return code.Code() + ": " + code.Error() + ", " + syscall + " '" + path + "'"
}

// nodeErrorNoPath is nodeError for the calls where Node prints no path, such
// as read(2) of a directory: "EISDIR: illegal operation on a directory, read".
func nodeErrorNoPath(err error, syscall string) string {
	code, ok := errnoOf(err)
	if !ok {
		return err.Error()
	}
	return code.Code() + ": " + code.Error() + ", " + syscall
}

// fileError is an error whose message is a Node-style text; it keeps the
// original error for errors.Is (a transport failure stays one).
type fileError struct {
	msg string
	err error
}

func (e *fileError) Error() string { return e.msg }
func (e *fileError) Unwrap() error { return e.err }

// nodeErr wraps err with its nodeError text.
func nodeErr(err error, syscall, path string) error {
	return &fileError{msg: nodeError(err, syscall, path), err: err}
}

// textErr wraps err with a fixed text.
func textErr(msg string, err error) error {
	return &fileError{msg: msg, err: err}
}

func errnoOf(err error) (ops.Errno, bool) {
	if err == nil || errors.Is(err, ops.ErrTransport) {
		return "", false
	}
	code := ops.ErrnoOf(err)
	return code, code != ""
}
