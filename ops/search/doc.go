// Package search is pi-sandbox's one implementation of grep and find with
// ripgrep's and fd's semantics, written against ops.FS only, so the same code
// runs in-process on the local backend, inside a target through the shim, and
// as a slow fallback over any backend's core file system.
//
// Grep and Find are the helpers the tools call: they use a backend's
// ops.GrepFS / ops.FindFS capability when present and fall back to the
// engine (GrepFS, FindFS) otherwise. Remote is what a docker or ssh backend
// plugs in to offer the capabilities: the shim's engine in the target
// (GrepViaShim / FindViaShim, served by ShimGrep / ShimFind), else the
// target's rg and fd (GrepWithRG / FindWithFD), else ops.ErrUnsupported.
//
// Deliberate differences from ripgrep 13 and fd 8.6 as pi runs them: the
// .git directory is never searched or listed (rg --hidden and fd 8 --hidden
// would); find always honours .gitignore (fd --no-require-git, which fd 8.6
// lacks); results come in sorted walk order (both tools are multi-threaded
// and unordered); unreadable entries are skipped silently; global git
// excludes (core.excludesFile) are not read; an invalid regular expression
// reads "regex parse error: <detail>" in one line.
package search
