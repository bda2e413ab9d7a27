// Package local is the ops backend for the machine pi-sandbox runs on.
//
// By default it serves the in-target helper in this process (shim.InProcess:
// the same server that runs inside containers and on ssh hosts, over an
// in-memory stream) and talks to it with package ops/helper: one code path
// for every backend. A helper process of its own would run as the same
// user on the same machine and add only a process switch to each call
// (it doubled a read's latency). Every command runs under `__shim run`, a
// child subreaper in its own process group that on a timeout or cancel
// kills the whole tree, setsid escapees included, and that kills it too
// when this process dies; files are confined in the helper at open time.
// Closing the backend ends the helper session, which kills every command
// it still runs before Close returns.
//
// The shim binary is pi-sandbox-shim, or this executable when its main
// calls shim.Dispatch first; without either New fails with an error that
// names the binary, where it was looked for and how to install it. Where
// the helper cannot run (Config.NoHelper, or a start failure), the
// operations run in this process (package ops/internal/native) and
// Info.Limits says why; without the shim (Config.NoHelper and no binary,
// another OS) commands are killed by process group only, so a process that
// calls setsid survives.
//
// File errors are *fs.PathError values wrapping an [ops.Errno], with Node's
// syscall names as Op ("open", "stat", "scandir", "mkdir", "realpath",
// "access", "unlink"). WriteFile is atomic (temp file in the same directory,
// fsync, rename) and falls back to an in-place write where a rename cannot
// work (EBUSY, EXDEV) or the directory is not writable. Commands are not
// confined to the working directory: locally, the file system is the
// machine's.
package local
