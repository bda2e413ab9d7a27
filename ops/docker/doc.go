// Package docker is the pi-sandbox backend for a Docker container, through
// the Engine API (github.com/moby/moby/client; the API version is
// negotiated, so Debian's docker.io 20.10 with API 1.41 works, and any
// engine DOCKER_HOST names, unix or tcp).
//
// [New] either creates an ephemeral container from [Config.Image] with the
// hardened profile — user 1000:1000 (with Mounts and no User, the owner of
// the first mount's source unless it is root's), CapDrop ALL, no-new-privileges, an
// init, pids/memory/CPU limits, network none, a read-only root file system
// with an exec-enabled tmpfs on /tmp, the workspace and the sandbox's own
// directory on volumes; each relaxation is a named [Config] field — which
// Close removes with its volumes, or uses an existing container as it is
// ([Config.Container]). Images are never pulled (see package images).
//
// A container [Up] created (labels LabelManaged and LabelKind "sandbox")
// is an up sandbox: every backend opened on it shares one long-lived
// helper, a daemon in the container (`__shim serve --listen`) reached
// through `__shim relay` over each backend's one exec, so background
// processes outlive the backend that started them until [Down]; the
// sandbox's directory is /var/lib/pi-sandbox/up-UID in the up volume,
// shared and kept by Close; the relay trusts only a daemon proving the
// helper key of the LabelHelperKey label. Where the engine runs on this
// host and the helper is mounted (runc, Podman; not gVisor), an up
// container also has a directory of this host at shim.HostDir (owned by
// the sandbox user, under a 0700 directory of this user's cache,
// [LabelHostSock]) in which the daemon listens as well: a backend connects
// there first, with no exec, and trusts the daemon only when it proves the
// key and is the socket's peer (shim.HostDaemon); otherwise the relay
// serves. Tunnels (ops.TargetDialer) and the egress proxy's connections
// take raw connections of that socket there (shim.HostDaemon.DialRaw), which
// carry a TCP connection's bytes with no HTTP/2 framing. The relay runs in an exec of its
// own (never after the probe's shell) from the execute-only shim binary,
// and is sent the key only when it says it was never dumpable; a helper
// that does not start there is an error, not the exec-per-operation
// fallback. On any other container a backend's helper, and what it keeps
// running, end with Close.
//
// # Commands
//
// Run is ExecCreate, then ExecAttach (which starts the
// exec), stdcopy demultiplexing, no TTY. The command runs under the
// ops/internal/shellproc wrapper: a session leader whose group is recorded,
// stderr merged into stdout at the source, and a control channel on the
// wrapper's own stderr (pgid, start failures, the shell's exit status, the
// cgroup's oom_kill counter before and after). The exit status comes from
// that channel; when the wrapper itself died, from ExecInspect polled until
// Running is false, which a ticker also watches while the command runs.
// After the shell exits, output is read until idle for ops.ExitGrace; then
// the remaining group is killed. Cancel and timeout run a second exec with
// the kill script (the shim's sweep first when the shim is there), then stop
// waiting for the stream.
//
// # The helper binary
//
// The static helper binary is the host's one for the container's
// architecture (shim.Binaries: the image's, or for an existing container
// the one the probe reports). A container this package creates on an
// engine of this host ([EngineOnThisHost]: a unix socket, and the engine
// names this host) has the host's helper cache bind-mounted read-only at
// /opt/pi-sandbox-helper, each binary there under its content address and
// execute-only; elsewhere, and under gVisor, it is uploaded once per
// container through exec stdin by root into a root-owned directory of /tmp
// (content-addressed, execute-only). A container we created (ephemeral,
// up, a pool member) always runs the helper: no binary for its
// architecture, or a helper that does not start, is an error unless
// Config.NoHelper asks for the fallback.
//
// An out-of-memory kill of a command is not in the container's State
// (that is PID 1's): Run compares the cgroup's oom_kill counter
// (memory.events on cgroup v2, memory.oom_control on v1) and sets
// ExitError.OOMKilled.
//
// # The fallback
//
// Without the in-target helper (Config.NoHelper, or an existing container
// that cannot run it, Info.Limits saying why) every operation is one exec: the scripts and the
// command wrapper of ops/internal/execops over this package's exec
// primitive (execer.go); ops/internal/dispatch picks the helper or them.
//
// # Files
//
// Files go through exec as well — cat for reads (streamed), a temp file and
// mv for atomic writes, stat -c, a NUL-separated listing, mkdir -p, test,
// readlink -f — not the archive API, which takes the container lock, fails
// on a read-only root and writes nothing under a tmpfs. The scripts work in
// busybox and in Debian's coreutils; failures come back as *fs.PathError
// values wrapping ops.Errno codes mapped from the tools' messages. Engine
// failures and a container that is gone wrap ops.ErrTransport; what the
// engine refuses of a configuration (an image it does not have, a missing
// mount source, an unknown user, a paused or stopped container) is
// ops.ErrConfig with its reason and the fix. Grep and
// Find run inside the container (the shim's engine, else rg and fd, through
// search.Remote); CountLines runs wc -l there.
//
// Each call is one exec, and its cost is almost all the runtime's process
// start in the container (runc exec); the API calls around it take a few
// milliseconds.
//
// # Sandboxes
//
// [Up], [Down], [List] and [GC] manage long-lived containers for the CLI;
// everything created carries the [LabelManaged] label (plus Config.Labels).
//
// # Pools
//
// [Fill] keeps idle members of a named pool: Up sandboxes whose helper
// daemon is already started, with the pool ([LabelPool]) and its
// configuration ([LabelPoolSpec], [LabelPoolHash]) in their labels — the
// pool has no other state. [Claim] takes one by renaming it from
// pi-sandbox-pool-NAME-idle-X to pi-sandbox-pool-NAME-claimed-X: the engine
// refuses a rename to the name a container already has, so one of several
// racing claims wins; the member's liveness comes from the engine, with no
// exec. [Drain] removes the idle members, [Keep] refills in a loop. A missing image or runtime is
// ops.ErrConfig before anything is created.
//
// # Lifetimes
//
// A container with [Config.TTL], [Config.IdleTimeout] or [Config.MaxIdle]
// runs the helper binary as its PID 1 (`__shim keep`), copied into its
// state volume through the engine between create and start; it records
// the limits in labels ([LabelTTL], [LabelIdleTimeout], [LabelMaxIdle]).
// When a limit passes PID 1 exits, the kernel kills the rest, and the
// engine removes the container with its volumes (AutoRemove). A pool
// member's clocks start at its claim: [Claim] signals its PID 1 (SIGUSR1)
// through the engine. [Remaining] reads the time left through the
// engine's archive API. An ephemeral container is AutoRemove too, and its
// helper (`__shim serve --end-container`) ends it when the session's
// client is gone — not when the backend drops that helper and starts
// another (a reply over one of the host's bounds): a hold file spares the
// container the dropped helper's SIGTERM.
package docker
