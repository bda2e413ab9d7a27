// Package shim is pi-sandbox's in-target helper: it runs one command as a
// child subreaper and, when the command ends or on request, kills every
// process the command started — including those that called setsid and left
// every process group. It is linked into the pi-sandbox binary as the hidden
// subcommand "__shim"; the binary is built with CGO_ENABLED=0, so it can be
// uploaded into a container or onto a remote host of the same OS and
// architecture and run there.
//
// # Protocol
//
// All forms start with the executable and "__shim". Flags come before the
// positional arguments; "--" ends the flags of run.
//
//	pi-sandbox __shim run [--pidfile FILE] [--dir DIR] [--grace DURATION] -- PROGRAM [ARG...]
//	pi-sandbox __shim run --runs FD
//	pi-sandbox __shim kill [--wait DURATION] FILE
//	pi-sandbox __shim serve [--pidfile FILE] [--lease DURATION] [--end-container]
//	pi-sandbox __shim serve --listen DIR
//	pi-sandbox __shim relay [--key-stdin] [--stop] DIR
//	pi-sandbox __shim version
//	pi-sandbox __shim grep 'GREPQUERY-JSON'
//	pi-sandbox __shim find 'FINDQUERY-JSON'
//
// run: the shim becomes a child subreaper (PR_SET_CHILD_SUBREAPER) and the
// leader of its own process group (setpgid(0,0), when it is not a session
// leader already), then starts PROGRAM (looked up in PATH when it has no
// "/") as its child in that group, in DIR when given (else the shim's own
// directory), with the shim's environment, stdin at /dev/null, and stdout and
// stderr on ONE pipe. The shim copies that pipe to its own stdout (fd 1) as
// bytes arrive, so the output is merged in the order it was written. The
// shim's own stderr (fd 2) carries only its diagnostics, one line each,
// starting with "pi-sandbox-shim: ".
//
// With --pidfile, the shim writes its pid and "\n" to FILE (atomically, via a
// temp file and rename) before PROGRAM starts, and removes FILE when it
// exits. The pid is also the process group of the command, so `kill -9 -PID`
// is a crude fallback that misses only setsid escapees.
//
// The command ends (a) when PROGRAM has exited and the output pipe has then
// been idle for --grace (default 100ms, pi's exit grace; re-armed on every
// chunk) or reached EOF, or (b) on a kill request: SIGTERM, SIGINT or SIGHUP
// to the shim, or the reader of the shim's stdout going away (a failed
// write, or POLLERR/POLLHUP on fd 1 while the command is silent: a dropped
// connection).
// Either way the shim then SIGKILLs every descendant (it walks /proc for
// processes whose parent chain leads to it, repeatedly, until none is left;
// zombies count as dead and are reaped), copies what is still buffered in the
// pipe, removes the pid file and exits with PROGRAM's status: its exit code,
// or, when PROGRAM was killed by signal n, the shim kills itself with the same
// signal (so the caller sees a signal death, e.g. 137 / SIGKILL for `kill -9
// $$`); if that does not end it, it exits 128+n.
//
// When PROGRAM exits, the shim at once writes the line
//
//	pi-sandbox-shim: exited STATUS
//
// to stderr (STATUS: the exit code, or 128+n for signal n), before the grace
// period, so a caller that times out while orphans keep writing still learns
// how the command itself ended. When the tree is gone and the output
// drained, just before it exits, the shim writes
//
//	pi-sandbox-shim: done exit CODE
//	pi-sandbox-shim: done signal N
//
// (the status its own exit will carry) and closes its stdout and stderr: a
// caller that has this line and both pipes' ends has the outcome without
// waiting for the process's exit, which follows.
//
// If PROGRAM cannot be started the shim writes one line
//
//	pi-sandbox-shim: start: OP PATH: CODE
//
// to stderr (OP "chdir" or "exec", CODE an errno name such as ENOENT) and
// exits with status 125; a pid file that cannot be written is such a
// failure too (OP "open", e.g. ENOSPC). Usage errors exit 2 with a
// diagnostic. Other diagnostic lines (warnings, e.g.
// when the subreaper cannot be set) may appear: callers ignore lines they
// do not know.
//
// run --runs FD: a pooled shim, started before its first command is known,
// that runs one command after another as run above: each run (its ARGS,
// its environment, and the two files it writes as run's stdout and stderr)
// arrives on the unix socket FD, and after a command that exited normally
// and left nothing behind the shim writes "pi-sandbox-shim: reusable" just
// before its "done" line, closes the run's files and waits for the next
// run; after any other end it exits as run does. A command that changed
// the shim's resource limits (which the next command would inherit) is
// not followed by another: "pi-sandbox-shim: limits changed WHAT" comes
// before "done" instead of "reusable". Each command runs in a
// process group of its own (the shim outlives it), which the shim kills
// when the run ends, after its sweep; "pi-sandbox-shim: started PID" names
// it as soon as the command has started. It is non-dumpable (it
// starts the next command of the same user). The framing is in
// runs_linux.go; the helper's backend (ops/internal/native) is its writer.
//
// kill: reads the pid from FILE; if that process is a shim (its
// /proc/PID/cmdline contains "__shim"), sends it SIGTERM (a kill request, as
// above) and waits until it has exited, at most --wait (default 5s). Exit
// status: 0 when the shim is gone (or was already gone), 1 on an error or
// when it is still alive after --wait, 2 when FILE does not exist (the shim
// has not written it yet, or has finished and removed it). `kill -TERM $(cat
// FILE)` is an equivalent request without the wait.
//
// serve: the in-target helper. It speaks HTTP/2 cleartext (prior knowledge)
// on stdin and stdout — package ops/shim/proto has the wire types, package
// ops/helper the client — and serves every ops operation of one sandbox:
// files (confined beneath registered roots at open time), grep and find
// (package ops/search on the target's disk), and commands, each under
// `__shim run` as above. It makes itself non-dumpable, so commands of the
// same user cannot trace it, and moves the protocol off fd 0 and 1. When
// stdin ends (the client closed the stream, died, or the connection
// dropped) it kills every command's tree and exits within about 2.5 s.
// With --pidfile it writes its pid to FILE like run does (so `__shim kill
// FILE` ends it and, through their control pipes, every command's tree) and
// removes FILE when it exits. With --lease it also exits that way when
// nothing arrived on stdin for DURATION: for transports where a vanished
// client closes nothing (pods/exec); the client then sends HTTP/2 pings
// while idle. docker and ssh do not use it (a paused container must not
// lose its session). With --end-container, once its session has ended it
// sends SIGTERM to PID 1 when that is ops/docker's keep-alive script (its
// command line holds KeepAliveMarker): an ephemeral container ends with
// its one client.
//
// serve --listen DIR: the daemon mode, for sandboxes that outlive their
// clients (`pi-sandbox up`). It listens on the unix socket DIR/helper.sock
// (DIR must be a directory of this user, mode 0700; no network listener).
// On every connection it accepts from this user it reads the client's
// nonce line, answers "pi-sandbox-helper BUILD PID PROOF" (BUILD: the
// SHA-256 of its binary; PROOF: hex HMAC-SHA256 under the helper key read
// from --key-fd of "pi-sandbox-helper|NONCE|BUILD|PID", or "-" without a
// key) and then serves it as serve does stdio: each connection is one client session with its own
// calls, which end (their trees killed) when it closes. Background
// processes belong to the daemon, shared by every session (one limit, one
// list), until SIGTERM, SIGINT or SIGHUP: it then ends every session, kills
// every background tree and exits. Its diagnostics go to DIR/helper.log.
// It is a child subreaper: when one of its shims dies by a signal (a
// command can kill its own shim), what that shim's tree left is
// re-parented to the daemon, which kills it with its descendants and
// reaps it — every child the daemon did not start is such an orphan.
// It compares its resource limits with those it started with when a
// connection arrives (before serving it) and after each command; when a
// command has changed them (every later command would inherit them) it
// replaces itself: it leaves the file DIR/limits-changed, closes its
// socket and shuts down as on SIGTERM, and the next relay starts a fresh
// one. The command that changed them, and the first command the next
// daemon runs, end their output with a note saying so.
//
// relay DIR: copies stdin to the daemon in DIR and its answers to stdout,
// so a client talks to it as to serve. It starts the daemon (in a new
// session, detached from its stdio) when none answers — under the lock
// file DIR/lock, so racing relays start one — and when the daemon runs
// another build (its first line says) it stops that one first, which ends
// its background processes. At the end of stdin it half-closes the
// connection and exits when the daemon has closed it. With --key-stdin it
// first writes "pi-sandbox-relay sealed" (it has been non-dumpable since
// its exec: its user cannot read the binary) or "pi-sandbox-relay exposed",
// and the first line of stdin is then the sandbox's helper key, or "-"
// (an exposed relay refuses a key): a daemon (or any process on the socket)
// that cannot prove the key is stopped and replaced by one started with it
// (passed on a pipe, never argv or the environment). The answer's pid must
// be the socket peer's (SO_PEERCRED). The daemon's log must be a regular
// file: anything else there is replaced (a FIFO never blocks the start).
// relay --stop DIR stops the daemon instead.
//
//	pi-sandbox __shim serve --listen DIR [--ready-fd N] [--key-fd N]
//	pi-sandbox __shim relay [--key-stdin] [--stop] DIR
//
// keep: a sandbox's lifetime, run as the container's PID 1 (it reaps
// orphans). --ttl D ends the sandbox D after the clocks start, --idle D
// (with --activity FILE) once FILE's modification time is D old; the
// helper daemon touches the file named by $PI_SANDBOX_ACTIVITY_FILE at
// every request's start and end and every second while one runs. With
// --wait-claim the clocks start at the first SIGUSR1 (a pool's claim), and
// --max-idle D ends a member no claim took within D. To end the sandbox it
// exits, after a line on stderr saying why: the kernel kills every process
// of the namespace. --state FILE receives LifetimeState (JSON) when the
// clocks start. SIGTERM, SIGINT and SIGHUP make it exit too (a stop).
//
//	pi-sandbox __shim keep [--ttl D] [--idle D --activity FILE] [--state FILE] [--wait-claim [--max-idle D]]
//
// version: prints "pi-sandbox-shim 1" (the protocol version) and exits 0,
// so a backend can check an uploaded binary runs in the target.
//
// grep, find: the search engine of package ops/search run in the target
// (protocol in ops/search: JSON lines on stdout, a final status line).
//
// # Finding the binary
//
// The slim cmd/pi-sandbox-shim binary runs only this package; the pi-sandbox
// CLI dispatches it too. [Dispatch] must be called first thing in main (and in TestMain of tests
// whose backend re-executes the test binary): it runs the shim and exits when
// os.Args[1] is "__shim", and records that this executable can serve as the
// shim ([Available]). [HostBinary] names the static binary to upload into
// targets: $PI_SANDBOX_SHIM_BIN when set (tests set it to a CGO_ENABLED=0
// build of ./cmd/pi-sandbox-shim), else pi-sandbox-shim next to this
// executable, else this executable when it is static and dispatches the
// shim; [LocalBinary] the one to run on this machine (linking does not
// matter there). Finding none is a [BinaryError]: it names every place
// looked at, why each could not serve (a dynamically linked build, the
// default of go build with cgo, cannot run in a container), and how to
// install both binaries.
package shim
