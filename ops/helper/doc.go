// Package helper is the client of the in-target helper (`pi-sandbox-shim
// __shim serve`, package ops/shim): an ops.Backend whose every operation is
// one HTTP/2 stream over a single byte stream to a long-lived process in the
// target — a docker exec's stdio, an ssh session, or a local pipe. Backends
// supply only Config.Dial: how to start the helper and reach its stdio.
//
// Calls are multiplexed with per-stream flow control, so a slow consumer of
// one command's output holds back only that command. At most
// Config.MaxInFlight calls are in flight; more wait for a place. Cancelling a
// Run asks the helper to kill the whole tree and waits until it is dead; the
// timeout travels with the request and is enforced in the target, with a
// client-side backstop for a helper that is frozen (a paused container).
// There are no keepalive pings, so a paused target loses nothing.
//
// A lost stream (the helper killed, the container restarted, a cut
// connection) fails the calls in flight with errors wrapping
// ops.ErrTransport; the next call dials a new helper and registers the
// confinement root sets again.
//
// The target is not trusted, and neither is the helper: every reply is
// bounded (a JSON reply by MaxReply, a header block by MaxHeaderBytes, an
// HTTP/2 or run frame by 1 MiB, an error text by proto.MaxErrorText) and a
// session's start (the stream setup and the hello) by Config.StartTimeout.
// A reply over its bound ends the session with a *LimitError that names
// the bound.
//
// Confine returns a view confined in the target itself: the helper resolves
// each path component by component beneath the roots and uses it in the same
// step, so a symbolic link swapped between a check and the use cannot lead
// outside.
package helper
