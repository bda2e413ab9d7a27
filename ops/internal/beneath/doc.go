// Package beneath confines file operations to a set of root directories at
// open time: resolving a path and using it are one step, so a symbolic link
// swapped in between a check and the use cannot lead outside (the race of
// the check-then-use confinement in package sandbox).
//
// [Open] opens every root once (its real path is resolved then). Each
// operation walks its path element by element from a root's directory fd
// with openat(dirfd, elem, O_PATH|O_NOFOLLOW|O_CLOEXEC) and fstat. A
// symbolic link is read with readlinkat on its O_PATH fd and the walk goes
// on with its target: a relative target from the directory that holds the
// link, an absolute one from whichever root contains it. ".." never walks up
// through an fd: the directory walked so far has a real, link-free path, so
// ".." is its lexical parent, and the walk restarts there. Walks start at
// an fd of "/" opened by Open; a root's path is always entered through the
// root's own fd. Parts of a path outside every root are walked the same way
// (their links are followed, so a link outside that leads into a root
// works, as in sandbox.Confine), but only a location inside a root is ever
// opened for use, listed or changed: what ends outside is refused. More
// than 40 links is ELOOP. Where the middle of a path is plain names inside
// one root, a single openat2 call (RESOLVE_BENEATH, RESOLVE_NO_SYMLINKS,
// RESOLVE_NO_MAGICLINKS) walks it; on any link (or without openat2) the
// element walk takes over from the same place. The final operation is done relative to the
// directory fd of the final element's parent with O_NOFOLLOW (or on the
// element's own O_PATH fd), so the element cannot be swapped for a link
// either; if it is, the link is followed (or not) by the same rules.
//
// The observable rules are those of sandbox.Confine:
//
//   - A path is judged by where it finally leads: the first root, in the
//     order given to Open, that contains its resolved location decides.
//     Put read-only roots nested in a writable one before it to make them
//     read-only (sandbox.Confine lists the working directory first).
//   - Links that resolve inside some root work, whichever root that is
//     (absolute links inside a root, links from the working directory into
//     the spill directory or another allowed root). Links that lead outside
//     every root are refused with an [*OutsideError].
//   - A missing tail is judged by the deepest existing directory's real
//     path with the missing names appended; then the operation fails as the
//     kernel would (ENOENT, ENOTDIR), or creates the missing last element.
//   - Names are cleaned lexically first (as sandbox.Confine does), so
//     "/w/link/.." is "/w"; ".." inside link targets is resolved for real.
//   - Lstat and Remove do not follow the last element: a link pointing
//     outside can be inspected and removed. Everything else follows it; a
//     write through a dangling link creates its target, which must be in a
//     writable root. OpenFile with O_CREATE|O_EXCL never follows a final
//     link (EEXIST, as the kernel), nor with O_NOFOLLOW (ELOOP).
//   - Read-only roots refuse OpenFile with write flags, MkdirAll, Remove,
//     WriteFileAtomic and Access with the write bit.
//   - A single writable root "/" allows everything (the unconfined mode);
//     links are followed by the same walk.
//
// Errors are *fs.PathError values wrapping a syscall.Errno, with the Op
// names of the ops backends ("open", "stat", "lstat", "scandir", "mkdir",
// "unlink", "realpath", "access", "write", "fsync", "rename"), or wrapping
// an *OutsideError (Op "confine"), which satisfies errors.Is(err,
// fs.ErrPermission). Names must be absolute; a NUL byte or a relative name
// is EINVAL.
//
// What it does not cover: a directory that was walked into and is then
// moved out of every root by someone else keeps being used through its fd
// until the operation ends (as with openat2 RESOLVE_BENEATH). Magic links
// of /proc (/proc/self/fd/N) are read as ordinary links, never traversed by
// the kernel. Removing a root itself is EBUSY. Only Linux is supported;
// elsewhere every function returns errors.ErrUnsupported.
//
// A Set is safe for concurrent use; Close it after every call returned.
//
// The API:
//
//	Open(roots []Root) (*Set, error)            // roots resolved and opened; order = priority
//	(*Set).Roots() []Root                        // with real paths
//	(*Set).Close() error
//	(*Set).OpenFile(name, flag, perm) (*os.File, error)   // os.OpenFile flags; follows a final link
//	(*Set).Stat(name) / Lstat(name) (fs.FileInfo, error)  // Sys() is *syscall.Stat_t
//	(*Set).ReadDir(name) ([]fs.DirEntry, error)  // sorted; entries stated through the dir fd
//	(*Set).MkdirAll(name, perm) error
//	(*Set).Remove(name) error                    // does not follow a final link
//	(*Set).RealPath(name) (string, error)        // last element may be missing
//	(*Set).Access(name, mode uint32) error       // access(2) bits, real user
//	(*Set).WriteFileAtomic(name, io.Reader, perm) error   // ops.FS.WriteFile semantics
package beneath
