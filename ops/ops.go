package ops

import (
	"context"
	"io"
	"io/fs"
	"time"
)

// FS is the file system every backend provides. All paths are absolute target
// paths (see the package doc). Errors are *fs.PathError values wrapping an
// [Errno], except transport failures, which wrap [ErrTransport].
type FS interface {
	// Open opens name for a streaming read. Opening a directory fails with
	// EISDIR (Op "read"). Closing the reader early stops the transfer.
	Open(ctx context.Context, name string) (io.ReadCloser, error)

	// OpenWriter opens name for a streaming write. flag is a combination of
	// os.O_CREATE, os.O_EXCL, os.O_TRUNC and os.O_APPEND (O_WRONLY is implied);
	// perm applies to a file that is created. Data is durable once Close
	// returns nil. Used for spill files, not for edits (see WriteFile).
	OpenWriter(ctx context.Context, name string, flag int, perm fs.FileMode) (io.WriteCloser, error)

	// Stat follows symbolic links; Lstat does not.
	Stat(ctx context.Context, name string) (fs.FileInfo, error)
	Lstat(ctx context.Context, name string) (fs.FileInfo, error)

	// ReadDir lists a directory sorted by name (byte order), like os.ReadDir.
	// Entries describe the entry itself (symbolic links are not followed).
	ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error)

	// WriteFile replaces name atomically: readers see the old or the new
	// content, never a mix. The real path is resolved first, so writing
	// through a symbolic link updates its target. An existing file keeps its
	// mode; a new file gets perm and belongs to the target user. Where rename
	// cannot work (a bind-mounted single file: EBUSY, EXDEV) the backend falls
	// back to an in-place write. Hard links to the old file are broken.
	WriteFile(ctx context.Context, name string, data []byte, perm fs.FileMode) error

	// MkdirAll creates name and any missing parents; it succeeds if name is
	// already a directory.
	MkdirAll(ctx context.Context, name string, perm fs.FileMode) error

	// RealPath resolves name on the target: symbolic links are followed and
	// the result is absolute and clean. The last element may be missing (its
	// parent is resolved and the name appended); a missing parent is ENOENT.
	RealPath(ctx context.Context, name string) (string, error)

	// Access checks that name exists and allows mode for the target user
	// (access(2) semantics, with the errno of the failure).
	Access(ctx context.Context, name string, mode AccessMode) error

	// Remove removes a file or an empty directory.
	Remove(ctx context.Context, name string) error
}

// AccessMode is a set of access(2) bits. The zero value checks existence.
type AccessMode uint32

const (
	AccessExists AccessMode = 0
	AccessExec   AccessMode = 1
	AccessWrite  AccessMode = 2
	AccessRead   AccessMode = 4
)

// Cmd describes one command for [Runner.Run].
type Cmd struct {
	// Command is a shell command string, run as `SHELL -c Command` with the
	// target's shell (Info.Shell: bash when present, else sh).
	Command string

	// Dir is the absolute working directory; empty means Info.WorkDir. A
	// missing directory is a *StartError wrapping a *fs.PathError (ENOENT,
	// Op "chdir").
	Dir string

	// Env holds "KEY=VALUE" entries added to (and overriding) the base
	// environment. The local backend's base is the host environment (its
	// Info has CapHostEnv); docker and ssh pass nothing of the host unless
	// listed here.
	Env []string

	// BaseEnv, when not nil, replaces the backend's base environment
	// ("KEY=VALUE" entries; an empty list is an empty base); Env is still
	// added on top. Nil keeps the backend's own base.
	BaseEnv []string

	// Output receives stdout and stderr merged at the source, in the order
	// the command wrote them, as bytes arrive. Write is called from one
	// goroutine at a time and must not retain p. Nil discards output.
	Output io.Writer

	// Timeout, when positive, stops the whole process tree after that long
	// and makes Run return a *TimeoutError.
	Timeout time.Duration
}

// Runner runs commands in the target.
type Runner interface {
	// Run runs cmd with stdin closed and no TTY and waits for it.
	//
	// It returns nil for exit status 0; an *ExitError for a non-zero status
	// (Code 128+n when killed by signal n); a *StartError when the command
	// could not start; a *TimeoutError when cmd.Timeout passed; an error
	// wrapping ErrCanceled and context.Cause(ctx) when ctx was done first; or
	// an error wrapping ErrExitUnknown when the transport lost the status.
	//
	// On timeout or cancel the whole process tree is killed (SIGKILL to every
	// process at once), and Run returns promptly even if an orphan holds the
	// output open. After the shell exits, output is still collected while it
	// keeps arriving, until it has been idle for [ExitGrace].
	Run(ctx context.Context, cmd *Cmd) error
}

// ExitGrace is how long Run keeps reading after the shell exited, re-armed on
// every chunk (pi's EXIT_STDIO_GRACE_MS).
const ExitGrace = 100 * time.Millisecond

// StillQuiet confirms, when the exit grace ran out, that the output is
// quiet: it waits a fifth of [ExitGrace] for a chunk signalled on activity
// (one already signalled counts) and reports false if one came. After a
// stall of the reading process the grace's timer and the output it missed
// are ready at once; without the check the timer could win. A closed done
// (the output ended) counts as quiet.
func StillQuiet(activity <-chan struct{}, done <-chan struct{}) bool {
	t := time.NewTimer(ExitGrace / 5)
	defer t.Stop()
	select {
	case <-activity:
		return false
	case <-done:
		return true
	case <-t.C:
		return true
	}
}

// ExitOutputLimit bounds how long output that keeps arriving after the
// shell exited (a background writer such as `yes &`, which ExitGrace alone
// would wait for forever) keeps a call that has no timeout open (a
// timeout bounds it, as in pi). Then the call ends with the
// output so far and a note: under the shim the writers are handed to the
// sandbox's background processes with their own log (pi-bg-*.log, listed
// by ps) where the runner keeps them, else killed.
const ExitOutputLimit = 2 * time.Second

// DefaultSavedOutputTotal is a sandbox's bound on its saved outputs when
// its Info sets none.
const DefaultSavedOutputTotal = 4 << 30

// Backend is a complete target: files, commands and a description.
type Backend interface {
	FS
	Runner
	// Info describes the target. It does not block.
	Info() Info
	// Close releases the backend and removes what it created (the spill
	// directory, an ephemeral container). It is safe to call twice.
	Close() error
}

// Info describes a target.
type Info struct {
	// Backend is a display name ("local", "docker", "ssh") for people and
	// logs. No code decides on it: a difference in behaviour or cost is a
	// capability (an interface such as LineCountFS, or Capabilities).
	Backend  string
	WorkDir  string // absolute working directory for tools and commands
	Home     string // the target user's home directory
	User     string // the target user's name ("" when unknown)
	UID, GID int    // -1 when unknown
	OS, Arch string // GOOS/GOARCH spelling: "linux", "amd64"
	Shell    string // absolute path of the shell used by Run
	// UserChoice says how the sandbox's user is chosen when it is opened
	// ("--user UID:GID", "--host USER@HOST"), for the advice a permission
	// error carries; "" where it cannot be chosen (the local user).
	UserChoice string
	// SpillDir is the sandbox's own directory for spill files (bash's full
	// output), disk-backed and removed by Close.
	SpillDir string
	// CheckpointDir is the store of the working directory's checkpoints
	// (ops.CheckpointFS) in the sandbox's lasting state directory; "" when
	// it has none (a one-shot sandbox, a state directory that fell back to
	// a temporary one).
	CheckpointDir string
	// SavedOutputTotal bounds the bytes of all saved outputs under the
	// spill directory's parent (every working directory's spill
	// directory): 0 means DefaultSavedOutputTotal, negative no bound.
	SavedOutputTotal int64
	// Capabilities names what the backend offers beyond the core, e.g.
	// "shim", "grep", "find", "linecount", CapHostEnv.
	Capabilities []string
	// Limits lists, in plain words, what the backend cannot promise here
	// (e.g. "no shim: a process that calls setsid survives a kill").
	Limits []string
}

// CapHostEnv is the capability of a backend whose commands start from the
// host process's environment (the local backend): a policy that keeps host
// variables from commands replaces its base (Cmd.BaseEnv).
const CapHostEnv = "hostenv"

// Has reports whether the capability c is listed in i.Capabilities.
func (i Info) Has(c string) bool {
	for _, x := range i.Capabilities {
		if x == c {
			return true
		}
	}
	return false
}
