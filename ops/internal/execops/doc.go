// Package execops is a complete ops backend over an exec primitive: every
// operation is one process started in the target, a short POSIX sh script
// (busybox ash, dash, bash) whose output and status come back over the
// process's stdout and stderr. It is the fallback of the backends whose
// in-target helper cannot run (no shim, disabled, failed to start): docker's
// exec API today, a Kubernetes pods/exec next. The scripts, the errno
// mapping, the listing format and the command wrapper (ops/internal/shellproc)
// are the same for every transport.
//
// # What an implementer provides
//
// An [Execer] with one method, Start(ctx, Spec) (Process, error):
//
//   - Run Spec.Argv (argv[0] is an absolute path; no shell in between, no
//     TTY) as the target's user, or as uid 0 when Spec.Root is set (a
//     transport that cannot choose the user fails Start with an error
//     wrapping ops.ErrUnsupported; only the docker shim upload asks).
//   - Stdin: with Spec.Stdin != nil, copy it to the process's stdin and close
//     the stdin when the reader is at EOF (the scripts read it to EOF). With
//     Spec.StdinPipe, return a writer from Process.Stdin whose Close is EOF on
//     the process's stdin (a half-close: output keeps arriving). With
//     neither, the process gets an empty (closed) stdin.
//   - Stdout and stderr: deliver the process's bytes to Spec.Stdout and
//     Spec.Stderr in order, each stream from a single goroutine (the two may
//     run concurrently; a nil writer discards). Writes may block: that is
//     back-pressure, not an error.
//   - Process.Done: a channel closed once both output streams have ended
//     (no write to Spec.Stdout or Spec.Stderr follows); Process.Err then
//     says why they ended (nil for a clean end of stream).
//   - Process.Wait(ctx): the process's exit code once it has exited. It may
//     be called at any time, more than once, concurrently with the streams.
//     A transport that learns the status only with the end of the stream
//     (pods/exec: the status frame) waits for that. When the status cannot
//     be known (the stream was torn down first, the connection broke) it
//     returns an error wrapping ops.ErrTransport: the status is unknown, the
//     process may still run.
//   - Process.Close: tear down the stream (idempotent). Done follows soon.
//   - Cancelling Start's ctx may tear down the stream too. Neither kills
//     anything in the target: this package kills what it started with a
//     second process (Start again) running a kill script, by the pid file
//     the command wrapper or the shim writes (`SHIM __shim kill PIDFILE`,
//     then `kill -9 -PGID`), or by the pid a file script reports.
//   - Start failures of the transport (the API refused, the target is gone)
//     wrap ops.ErrTransport.
//
// The kill scripts rely on the target's exec starting each process as a
// session leader (runc and crun exec do: pid = pgid = sid), so that
// `kill -9 -PID` reaches the children of a file script; the command wrapper
// makes its own session either way.
//
// hostExec in local_test.go is a complete primitive over os/exec on the
// host, and TestConformanceHostExec runs the whole ops conformance suite
// over it: a new transport can be checked the same way.
//
// [Config] adds optional hooks for what the transport knows better: Lost
// (describe a target that stopped answering), Stopped (does the target
// itself stop, so a missing exit status is its death), RetryKill (a kill
// that could not start now, e.g. a paused container, retried later).
// [Ops.SetTarget] gives the probed facts (working directory, shell,
// environment, the per-call directory, the shim, the OOM counter probe).
//
// # What the target needs
//
// /bin/sh with test, printf, echo builtins; cat, stat -c (busybox or GNU),
// readlink -f, mkdir -p, mv, rm, rmdir, wc, setsid (for commands), xargs -0
// (large listings; without it one stat call takes all names). rg and fd,
// or the shim's engine, make Grep and Find run in the target (search.Remote);
// without them they return ops.ErrUnsupported and the caller walks.
package execops
