// Package memfs is an in-memory ops.Backend for fast tests of the tools.
//
// It models a POSIX tree with directories, regular files, symbolic links and
// owner permission bits (the test user owns every file and is not root), and
// reports the same *fs.PathError/ops.Errno errors as the real backends. A
// knob (SetMockErr) makes any operation fail on demand. Commands are not run
// unless a RunFunc is set: Run returns a *ops.StartError wrapping
// ops.ErrUnsupported.
//
// Limits: ".." in a path is resolved lexically before symbolic links (the
// kernel resolves it after); there are no hard links, owners or groups.
package memfs
