package ops

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"time"
)

// GrepQuery is a content search with ripgrep semantics: .gitignore files are
// respected, hidden files are searched, the regular expression dialect is
// rg's (Unicode-aware \d \w \s \b).
type GrepQuery struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path"`           // absolute file or directory
	Glob       string `json:"glob,omitempty"` // rg --glob (a leading "!" negates)
	IgnoreCase bool   `json:"ignoreCase,omitempty"`
	Literal    bool   `json:"literal,omitempty"`
	Context    int    `json:"context,omitempty"` // lines before and after, merged
	// MaxMatches stops the search after that many match events (0: no
	// limit). Context lines that follow the last match are still reported.
	MaxMatches int `json:"maxMatches,omitempty"`
	// MaxText keeps at most that many bytes of each reported line in
	// GrepEvent.Text (0: the whole line, up to the engine's line bound).
	MaxText int `json:"maxText,omitempty"`
}

// GrepEvent is one output line of a search, in rg's order: files in walk
// order, lines ascending, overlapping context windows merged.
type GrepEvent struct {
	// Path is relative to the searched directory with "/" separators, or
	// the file's base name when a single file is searched.
	Path  string `json:"path"`
	Line  int    `json:"line"`            // 1-based
	Match bool   `json:"match,omitempty"` // false for a context line
	// Text is the line without its trailing "\n" or "\r\n", as raw bytes.
	Text []byte `json:"text"`
	// Truncated is set when Text is only the beginning of the line (cut
	// at GrepQuery.MaxText, or a line over the engine's bound).
	Truncated bool `json:"truncated,omitempty"`
}

// GrepFS is implemented by backends that search inside the target.
type GrepFS interface {
	FS
	// Grep calls fn for each event. An error from fn stops the search and is
	// returned. An invalid pattern is an error wrapping ErrBadPattern.
	Grep(ctx context.Context, q *GrepQuery, fn func(GrepEvent) error) error
}

// FindQuery is a file search with fd semantics: glob patterns, .gitignore
// respected, hidden files included, smart case, patterns containing "/"
// anchored at the search root.
type FindQuery struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"` // absolute directory
	// MaxResults stops after that many results (0: no limit).
	MaxResults int `json:"maxResults,omitempty"`
}

// FindFS is implemented by backends that find files inside the target.
type FindFS interface {
	FS
	// Find calls fn with each result's path relative to q.Path, "/"
	// separated, with a trailing "/" for directories. An error from fn stops
	// the search and is returned.
	Find(ctx context.Context, q *FindQuery, fn func(rel string) error) error
}

// LineCountFS is implemented by backends that can count lines in the target
// without transferring the file. Where counting there saves nothing (a
// local file, a small remote one) CountLines returns ErrUnsupported, so
// callers that can stream on instead do (see CountLinesInTarget); a backend
// that never saves anything does not implement it.
type LineCountFS interface {
	FS
	// CountLines returns the number of "\n" bytes in name and its size, or
	// an error wrapping ErrUnsupported.
	CountLines(ctx context.Context, name string) (newlines, size int64, err error)
}

// CountLinesInTarget counts the "\n" bytes of name in the target, through
// LineCountFS, without a fallback: it returns an error wrapping
// ErrUnsupported when fsys cannot count there more cheaply than a caller
// streaming the file would. Wrappers of a backend forward it with this
// function, not with CountLines.
func CountLinesInTarget(ctx context.Context, fsys FS, name string) (newlines, size int64, err error) {
	lc, ok := fsys.(LineCountFS)
	if !ok {
		return 0, 0, ErrUnsupported
	}
	return lc.CountLines(ctx, name)
}

// CountLines counts the "\n" bytes of name, through LineCountFS when fsys has
// it, else by streaming the file.
func CountLines(ctx context.Context, fsys FS, name string) (newlines, size int64, err error) {
	if lc, ok := fsys.(LineCountFS); ok {
		n, s, err := lc.CountLines(ctx, name)
		if !errors.Is(err, ErrUnsupported) {
			return n, s, err
		}
	}
	r, err := fsys.Open(ctx, name)
	if err != nil {
		return 0, 0, err
	}
	defer r.Close()
	buf := make([]byte, 64<<10)
	for {
		k, rerr := r.Read(buf)
		newlines += int64(bytes.Count(buf[:k], []byte{'\n'}))
		size += int64(k)
		if rerr == io.EOF {
			return newlines, size, nil
		}
		if rerr != nil {
			return newlines, size, rerr
		}
		if err := ctx.Err(); err != nil {
			return newlines, size, err
		}
	}
}

// ReadFile reads all of name through fsys.Open.
func ReadFile(ctx context.Context, fsys FS, name string) ([]byte, error) {
	r, err := fsys.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// Exists reports whether name exists (following symbolic links). Errors
// other than "not exist" are returned.
func Exists(ctx context.Context, fsys FS, name string) (bool, error) {
	_, err := fsys.Stat(ctx, name)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return false, err
}

// ReplaceFS is implemented by backends that replace a file's content in one
// round trip, atomically with respect to other replacements of the same
// file (a lock in the target): the read-modify-write of an edit.
type ReplaceFS interface {
	FS
	// ReplaceFile writes data to name (atomically, as WriteFile) if name's
	// content is still old; otherwise it fails with an error wrapping
	// ErrConflict and changes nothing. It waits a bounded time for the
	// target's lock (a *LockedError then), and no longer than ctx: once
	// it holds the lock, the write lands even when ctx ends.
	ReplaceFile(ctx context.Context, name string, old, data []byte) error
}

// WriteParentsFS is implemented by backends that do the write tool's three
// steps in one round trip (the helper).
type WriteParentsFS interface {
	FS
	// WriteFileParents makes name's parent directories (MkdirAll, 0o755),
	// fails when name exists as something else than a regular file or a
	// directory, and writes data as WriteFile does. Its errors do not say
	// which step failed: a caller that must know repeats the steps one by
	// one (they change nothing twice).
	WriteFileParents(ctx context.Context, name string, data []byte, perm fs.FileMode) error
}

// ErrConflict marks a ReplaceFile whose file changed since it was read.
var ErrConflict = errors.New("ops: file changed since it was read")

// LockedError is a ReplaceFile that gave up waiting for the lock on the
// file's directory (an exclusive flock, which any process of the target
// can hold): nothing was changed.
type LockedError struct {
	Dir string
}

func (e *LockedError) Error() string {
	return "ops: could not lock " + e.Dir + ": held by another process"
}

// Process is one process a command left running in the background, owned
// by the sandbox until it ends or the sandbox closes.
type Process struct {
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	State   string    `json:"state"`   // "running", "sleeping", "stopped", "zombie", ...
	Command string    `json:"command"` // its command line, arguments space-separated
	Group   int       `json:"group"`   // the pid of the shim that owns its tree
	Log     string    `json:"log"`     // where its output goes (in the spill directory)
}

// ProcessLister is implemented by backends whose processes may outlive the
// command that started them (capability "background").
type ProcessLister interface {
	Backend
	Processes(ctx context.Context) ([]Process, error)
}

// ErrBackgroundLimit marks a command that left processes running while the
// sandbox already owned its limit of background process groups; they were
// killed.
var ErrBackgroundLimit = errors.New("ops: too many background processes")

// TargetDialer is implemented by backends that open TCP connections to the
// target's own loopback: DialTarget connects to 127.0.0.1:port as seen
// inside the target (a container's or pod's network namespace, an ssh
// host's loopback, the local host's). The connection is full duplex;
// where the returned net.Conn has CloseWrite, it ends the target's input
// and keeps reading. A refused connection is an error, returned without
// waiting.
type TargetDialer interface {
	Backend
	DialTarget(ctx context.Context, port int) (net.Conn, error)
}

// TargetListener is implemented by backends that listen on the target's
// own loopback for the host: ListenTarget listens on 127.0.0.1 (an
// ephemeral port) as seen inside the target, and each connection a
// process there makes to it is accepted on the host side, as a full
// duplex net.Conn (with CloseWrite where the transport has one). The
// listener's Addr is the target's address. Closing it closes the target's
// port; connections accepted before stay open until closed.
type TargetListener interface {
	Backend
	ListenTarget(ctx context.Context) (net.Listener, error)
}

// CapSharedLoopback is the capability of a backend whose target's loopback
// is shared with other users of the machine (the local host, an ssh host):
// a listener there is reachable by their processes too.
const CapSharedLoopback = "sharedloopback"
