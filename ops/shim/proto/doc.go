// Package proto is the wire protocol between the in-target helper (`__shim
// serve`, package shim) and its client (package ops/helper): HTTP/2
// cleartext with prior knowledge over one byte stream (a docker exec's
// stdio, an ssh session, a pod exec or a local pipe), one stream per call.
//
// Control is JSON; file content is raw bytes, never base64. A run's reply is
// a stream of frames, kind(1) | len(u32 big endian) | payload: output bytes
// verbatim, then one end frame with the outcome. Errors carry the op, path
// and errno, so the client rebuilds the same *fs.PathError every backend
// returns. Cancelling a request (a stream reset) is the kill request.
package proto
