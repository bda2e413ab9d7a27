// Package native is the ops backend over this process's own operating
// system: os file calls and os/exec, each command under the shim when one is
// configured (Config.ShimPath). It is what the in-target helper (`__shim
// serve`) runs inside a container, on an ssh host or on this machine, and it
// is the local backend's fallback where the helper cannot start.
//
// Commands run in their own process group; a timeout or cancel stops the
// tree (through the shim's kill request, then a group kill), and a final
// group kill follows every command. Without the shim, a process that calls
// setsid survives the kill (Info.Limits says so).
package native
