// Package search is pi-sandbox's one implementation of grep and find with
// ripgrep's and fd's semantics, written against ops.FS only, so the same code
// runs in-process on the local backend, inside a target through the shim, and
// as a slow fallback over any backend's core file system.
//
// Grep and Find are the helpers the tools call: they use a backend's
// ops.GrepFS / ops.FindFS capability when present and fall back to the
// engine (GrepFS, FindFS) otherwise. GrepWithRG and FindWithFD let a remote
// backend implement the capabilities with the target's rg and fd when the
// shim is absent; ShimGrep / ShimFind and GrepViaShim / FindViaShim are the
// two ends of the shim protocol.
package search
