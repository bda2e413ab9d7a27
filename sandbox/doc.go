// Package sandbox turns a backend and a configuration (confinement and a
// policy) into a ready set of tools: it wraps the backend with the policy's
// environment and path confinement, and installs policy hooks into the loop.
// It is also the public Go API for programs that embed pi-sandbox.
//
// # Opening
//
// [OpenBackend] makes a sandbox on any [ops.Backend] the program opened.
// Package sandbox imports no backend; package
// github.com/pi-sandbox/pi-sandbox/sandbox/open opens the built-in ones by
// name (local, docker, ssh), a running container, or an SSH connection the
// program holds. The [Sandbox] carries the confined backend and the tools
// ([Sandbox.Backend], [Sandbox.Tools]) and, through [Sandbox.LoopOptions] (or
// [Sandbox.NewLoop]), the policy hooks every loop over them should get.
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
// The escape suite every backend runs is in package sandboxtest.
package sandbox
