// Package shellproc builds the small POSIX sh scripts that the exec
// fallback (ops/internal/execops: docker without the helper, next
// Kubernetes) uses to run a command as a killable process tree. (The
// ssh backend has its own runner, ops/ssh/run.go: one session per command,
// whose stderr is the command's, so it cannot use this control channel.)
//
// Docker (and pods/exec) cannot kill a tree: there is no exec-kill API. So every command runs
// under a wrapper, started as `/bin/sh -c WRAPPER` through the transport,
// that
//
//   - checks and enters the working directory (a failure is reported, not run),
//   - starts the command as a session leader with `setsid` (in a
//     non-interactive shell a background child is never a group leader, so
//     setsid does not fork and $! is the new process group; busybox setsid
//     has no -w, so the wrapper waits itself),
//   - gives it stdin </dev/null and merges stderr into stdout at the source
//     (2>&1), so the byte order is the order the command wrote,
//   - exports the environment inside the child only (the wrapper's own PATH
//     lookups are not affected by a caller's PATH),
//   - records the process group in a per-call pid file,
//   - waits for the child and reports its status at once on the control
//     channel ("exit N"),
//   - keeps copying output (through a pipe and cat) until every process
//     holding it has closed it — a caller that does not want to wait for
//     such orphans after its exit grace kills the group, which ends that,
//   - sends a final `kill -9 -PGID` (processes the command left in its group
//     die with it, as with the local backend), and
//   - exits with the child's status (128+n for a signal death).
//
// Cancellation is a second exec running [KillGroupScript] (when
// the PGID is known from the control channel) or [KillScript] (from the pid
// file). busybox kill rejects "--", so the scripts write `kill -9 -PGID`.
//
// When a shim path is given (ops/shim, the pi-sandbox binary uploaded into
// the target), the session leader is `SHIM __shim run --pidfile F -- SHELL -c
// COMMAND` instead, which also catches a process that calls setsid itself
// (see [Spec.Shim]); [KillScript] then asks the shim to sweep before the
// group kill. The shim's "pi-sandbox-shim: start: ..." line is parsed too.
//
// # Control channel
//
// The command's stdout and stderr both go to the wrapper's stdout. The
// wrapper's own stderr therefore carries only control lines, each starting
// with [ControlPrefix]:
//
//	pi-sandbox-shellproc: pgid 1234
//	pi-sandbox-shellproc: start chdir ENOENT
//	pi-sandbox-shellproc: exit 0
//	pi-sandbox-shellproc: done
//
// "exit" comes as soon as the shell ends; "done" is the wrapper's last line,
// so a stream that ends without it means the wrapper itself was killed.
// A start failure (missing or unusable working directory, missing shell or
// setsid) also exits with [StartFailedCode]; [ParseControl] turns the lines
// into a [Control], whose Start field is a *fs.PathError (Op "chdir") or
// other error the backend wraps in an *ops.StartError. Transports that carry
// a single stream cannot use this package.
//
// The scripts work in busybox sh, dash and bash.
package shellproc
