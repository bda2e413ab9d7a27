package ops

import (
	"context"
	"io"
	"io/fs"
)

// CheckedOpenFS is implemented by backends that check, stat and open a file
// in one round trip (the helper): the access check, stat and open that the
// read and edit tools make one after the other.
type CheckedOpenFS interface {
	FS
	// OpenChecked checks name with Access(mode), stats it following links
	// and, when it is a regular file, opens it for reading, in one step. For
	// anything else (a directory, a FIFO, a device) it returns the info and
	// a nil reader, opening nothing. Any failure is an error; a caller that
	// needs the exact error of one step makes the steps one by one then.
	OpenChecked(ctx context.Context, name string, mode AccessMode) (fs.FileInfo, io.ReadCloser, error)
}

// DirCheckingRunner is implemented by runners whose Run checks Cmd.Dir
// before anything starts (in the same round trip as the command): a missing
// or unusable directory is a *StartError wrapping an *fs.PathError for Dir,
// so a caller needs no Stat of its own first.
type DirCheckingRunner interface {
	Runner
	// ChecksDir reports whether this runner checks Cmd.Dir so.
	ChecksDir() bool
}

// ListFS is implemented by backends that list a directory with what each
// entry leads to in one round trip (the helper): the stat, readdir and
// per-entry stats of the ls tool.
type ListFS interface {
	FS
	// ListDir stats name following links and lists it: every entry with the
	// mode of what it leads to (a link followed; OK false where that stat
	// failed: a dangling link, one leading outside the roots). Any failure
	// is an error; a caller that needs the exact error of one step makes
	// the steps one by one then.
	ListDir(ctx context.Context, name string) (fs.FileInfo, []ListEntry, error)
}

// ListEntry is one entry of a ListDir.
type ListEntry struct {
	Name string
	Mode fs.FileMode // of what the entry leads to
	OK   bool        // the stat of what it leads to succeeded
}
