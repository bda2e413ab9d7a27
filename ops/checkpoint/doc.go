// Package checkpoint records a directory tree in a content-addressed store
// and brings it back: the work of pi-sandbox's checkpoint, diff and restore
// commands. It works on the real filesystem of the machine it runs on (the
// in-target helper runs it, so no file content crosses to the host).
//
// A store is a directory holding blobs (file contents named by their
// SHA-256, shared by every checkpoint), one manifest per checkpoint (each
// path with its type, mode, size, link target and blob), an index of stat
// data and a lock file. A checkpoint is incremental: a file whose size,
// modification and change times, inode and mode match the index is not
// read again, as git's index does. Regular files, directories (empty ones
// too) and symbolic links are captured; other files (FIFOs, sockets,
// devices) are skipped and reported; hard links come back as separate
// files and sparse files dense. The store is never captured, and paths
// matching an exclude pattern are neither captured nor touched by a restore.
//
// Restore first records the tree as a checkpoint named "pre-restore-N", then
// makes the tree equal to the checkpoint: it removes what was added,
// rewrites what changed (each file through a temporary file renamed over
// it, its blob's SHA-256 verified while copying) and recreates what was
// removed. Link targets are data: never followed, and nothing is written
// through a link or outside the tree. A journal in the store marks a
// restore in progress; the next operation on the store completes it.
//
// Operations on one store serialize through an exclusive flock on its lock
// file, waited for at most [LockWait]. File contents are streamed: memory
// does not grow with file sizes.
package checkpoint
