// Package k8s runs a sandbox in a Kubernetes pod: an ephemeral hardened pod
// created from Config.Image (deleted by Close), or an existing pod
// (Config.Pod) used as it is. Every operation goes through the in-target
// helper (package ops/helper): the shim binary for the node's architecture
// (shim.Binaries) is uploaded through pods/exec
// stdin to a content-addressed path (its SHA-256 checked after the upload,
// since CRI runtimes have stdin-truncation bugs) and started as `__shim
// serve` in one long-lived pods/exec, whose stdio is the helper's stream.
//
// Exec is client-go's remotecommand wired as kubectl wires it: the
// WebSocket executor (v5.channel.k8s.io) with a fallback to SPDY offering
// only v4.channel.k8s.io (v1–v3 lose or garble the exit status), the
// fallback taken on an upgrade failure or an HTTPS proxy error, and always
// StreamWithContext. client-go's klog lines (stream copy errors on cancel,
// ping failures) are discarded.
//
// A dropped pods/exec closes nothing in the pod: the helper's stdin stays
// open and the helper, with every command, keeps running. So the helper runs
// with a pid file and a lease (`__shim serve --pidfile F --lease 30s`): each
// (re)dial first ends the backend's previous helper through that pid file,
// and a helper whose client vanished (a crashed CLI, a cut connection) exits
// by itself once its lease runs out (the client pings every 5 s while idle),
// killing every command's tree. Within the lease the trees of a cut stream
// live on; Close and a redial end them at once.
//
// The hardened pod (the zero value of every Config field) maps the docker
// backend's profile: uid/gid 1000 (with Mounts and no User, the owner of
// the first hostPath when this host can stat it and it is not root's) with
// runAsNonRoot, every capability
// dropped, no privilege escalation, seccomp RuntimeDefault, a read-only root
// file system with emptyDirs for /tmp (memory-backed, exec allowed), the
// workspace, the sandbox's state (spill files, pid files) and the shim,
// CPU, memory and ephemeral-storage limits, no service account token, no
// service links, restartPolicy Never, a one-second grace period, command
// sleep, our labels, and hostUsers: false where the node supports user
// namespaces (detected: a pod whose sandbox cannot start with it is
// recreated without, and Info.Limits says so). Each relaxation is a named
// field.
//
// The spill directory is keyed: for an existing pod by the pod's UID and
// the working directory (so a later call on the same pod, from another
// process too, can read an earlier call's full output), in an ephemeral pod
// it lives and dies with the pod.
package k8s
