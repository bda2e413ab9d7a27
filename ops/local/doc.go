// Package local is the ops backend for the machine pi-sandbox runs on: files
// through package os, commands through os/exec.
//
// # Commands
//
// Every command runs as `SHELL -c COMMAND` in its own process group, with
// stdin at /dev/null and stdout and stderr sharing one pipe, so the bytes
// arrive in the order the command wrote them. After the shell exits, output is
// still collected until it has been idle for [ops.ExitGrace]; then the whole
// group is killed (SIGKILL) — always, not only on timeout or cancel — so a
// background process holding the pipe cannot hang a call.
//
// Run does its own reading and stopping rather than relying on
// exec.CommandContext's Cancel and WaitDelay: the pipe is an *os.File given
// to the child, so os/exec has no copying goroutine for WaitDelay to bound,
// and the exit grace needs a reader that sees every chunk anyway. On cancel
// or timeout the group gets SIGKILL at once (no TERM ladder); with the shim,
// the shim is sent SIGTERM, which is its kill request: it SIGKILLs every
// descendant at once and exits, and the group kill follows regardless.
//
// When the running executable dispatches the shim ([shim.Dispatch] was called,
// as the pi-sandbox binary and this package's tests do), commands run under
// `EXECUTABLE __shim run`, a child subreaper that also kills descendants that
// left the process group with setsid. Info then lists the "shim" capability;
// otherwise Info.Limits says that such processes survive. If the shim
// binary cannot be executed (deleted since New), a command runs without it.
//
// What it cannot promise: a process that leaves the tree by other means
// than setsid (daemonised through a service manager, started over a socket
// by another process) is not the command's descendant and survives; a
// process stuck in uninterruptible sleep dies only when the kernel lets it.
// Commands are not confined to the working directory: locally, the file
// system is the machine's.
//
// # Files
//
// File errors are *fs.PathError values wrapping an [ops.Errno], with Node's
// syscall names as Op ("open", "stat", "scandir", "mkdir", "realpath",
// "access", "unlink"). WriteFile is atomic (temp file in the same directory,
// fsync, rename) and falls back to an in-place write where a rename cannot
// work (EBUSY, EXDEV) or the directory is not writable.
package local
