// Package sandbox turns a backend and a configuration (confinement and a
// policy) into a ready set of tools: it confines the backend's paths, gives
// the bash tool the policy's environment and output redaction as options of
// its commands (the tools call the backend, or its confined view, directly),
// and installs policy hooks into the loop.
// It is also the public Go API for programs that embed pi-sandbox.
//
// # Opening
//
// [OpenBackend] makes a sandbox on any [ops.Backend] the program opened.
// Package sandbox imports no backend; package
// github.com/pi-sandbox/pi-sandbox/sandbox/open opens the built-in ones by
// name (local, docker, ssh, k8s), a running container, or an SSH connection the
// program holds. The [Sandbox] carries the confined backend and the tools
// ([Sandbox.Backend], [Sandbox.Tools]) and, through [Sandbox.LoopOptions] (or
// [Sandbox.NewLoop]), the policy hooks every loop over them should get.
//
// A sandbox and one tool call, on this machine:
//
//	b, err := local.New(ctx, local.Config{WorkDir: dir})
//	sb, err := sandbox.OpenBackend(ctx, b, sandbox.Config{Policy: policy})
//	defer sb.Close()
//	res, err := sb.Call(ctx, "bash", map[string]any{"command": "ls"})
//	fmt.Print(res.Text())
//
// # Finding the helper binary
//
// Every built-in backend runs its operations through a long-lived helper,
// the pi-sandbox-shim binary; docker, ssh and k8s upload it into the
// target, so it must be statically linked (CGO_ENABLED=0); a target of
// another architecture falls back as with NoHelper, and Info.Limits says
// why. A backend's constructor looks for the binary, in order, at:
//
//   - $PI_SANDBOX_SHIM_BIN: when set, the only place looked at;
//   - pi-sandbox-shim next to the program's executable;
//   - the executable itself, when its main calls shim.Dispatch() (package
//     ops/shim) before anything else, which makes the program its own
//     helper; for docker, ssh and k8s it must then be built with
//     CGO_ENABLED=0.
//
// The backend's ShimBinary (ShimPath for local) setting names the file
// instead. The local backend also takes a dynamically linked binary.
// Finding none, the constructor fails, before any container, pod or
// connection is made, with a *shim.BinaryError that lists each place and
// why it did not serve, and how to install it:
//
//	CGO_ENABLED=0 go install github.com/pi-sandbox/pi-sandbox/cmd/pi-sandbox-shim@latest
//
// NoHelper (the backend's setting, or open.Config's; --no-helper in the
// CLI) asks for the fallback instead and needs no binary: every operation
// is its own exec or SSH session (a direct call on local) instead of a
// request to the helper, and without the binary a command is killed by its
// process group only, so a process that calls setsid itself survives a
// kill (Info.Limits says so).
//
// # Confinement
//
// File operations resolve their path on the target (symbolic links
// included) and must lie under a root: the working directory, the spill
// directory, and Config.AllowRoots / Config.ReadOnlyRoots. A refusal is an
// [*OutsideRootError]. The boundary does not stop: bash on the local backend
// (commands are not confined by path rules; in docker the container is the
// boundary), hard links made earlier, bind mounts, /proc and devices used by
// commands, and a link swapped between the check and the use.
//
// # Policy
//
// A [Policy] (JSON through [LoadPolicy], or flags) adds bash command rules
// and a tool deny list (before hook: "Command blocked by policy: …"), an
// environment allow-list, redaction of secrets from results (final and
// streamed) and an append-only audit log of JSON lines ([AuditEntry]). The
// command rules are a guard rail against mistakes, not a boundary.
//
// # Network
//
// [Sandbox.Dial] and [Sandbox.Forward] connect into the target's loopback.
// A policy's [NetworkPolicy] rules give the sandbox an egress proxy: the
// backend listens on the target's 127.0.0.1 ([ops.TargetListener], the
// helper), the bash tool's commands get HTTP_PROXY and its peers, and each
// connection is decided and dialled on this host (allow rules, resolved
// addresses checked, TLS server name checked; one [EgressEntry] audit line
// each). [InjectRule]s add a header to the requests for a host on this
// host's side, from a host variable that commands never get and results
// never show; HTTPS to such a host is terminated with a certificate
// authority made for the session (its key only in this process; its
// certificate in a bundle in the target that the commands' SSL_CERT_FILE
// and its peers name) and the real server is verified with the system's
// roots and NetworkPolicy.EgressCA. Close closes the proxy. On backends whose loopback
// is shared ([ops.CapSharedLoopback]) the proxy needs a per-session
// credential, Info.Limits says the policy is advisory, and inject rules
// need NetworkPolicy.AllowSharedInject.
//
// The escape suite every backend runs is in package sandboxtest.
package sandbox
