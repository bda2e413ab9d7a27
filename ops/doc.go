// Package ops defines the operations a pi-sandbox backend provides to the tools:
// a file system and a command runner in the target's namespace (the local
// machine, a container, or a remote host).
//
// It is a vocabulary package, like io/fs: interfaces, error values and small
// helpers. It imports nothing else of pi-sandbox.
//
// # Paths
//
// Every path at this boundary is an absolute, cleaned, slash-separated path in
// the target's namespace. Tools resolve relative paths against [Info.WorkDir]
// and "~" against [Info.Home] before calling a backend.
//
// # Errors
//
// File errors are [*fs.PathError] values whose Err is an [Errno]. An Errno
// satisfies the io/fs sentinels (errors.Is(err, fs.ErrNotExist) for ENOENT,
// fs.ErrPermission for EACCES and EPERM, fs.ErrExist for EEXIST) and carries
// the errno-style code ("ENOENT") that the tools turn into Node-style texts.
// Transport failures (engine gone, connection dropped) wrap [ErrTransport] and
// never look like a missing file; a configuration the target refuses (an
// image it does not have, an unknown user) wraps [ErrConfig].
//
// Commands end in one of these outcomes (see [Runner.Run]): nil (exit 0), an
// [*ExitError] (non-zero exit, 128+n for a signal death), a [*StartError]
// (could not start), a [*TimeoutError] ([Cmd.Timeout] passed), an error wrapping
// [ErrCanceled] and context.Cause(ctx), or [ErrExitUnknown].
//
// # Capabilities
//
// Optional capabilities are interfaces that embed [FS]: [GrepFS], [FindFS] and
// [LineCountFS]. Callers use the package-level helpers ([CountLines]) or those
// in ops/search (Grep, Find), which use the capability when present and fall
// back to the core otherwise, in the manner of fs.ReadFile and fs.ReadFileFS.
package ops
