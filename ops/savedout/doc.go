// Package savedout bounds the total size of a sandbox's saved outputs: the
// files bash's full output is saved in (and the background logs beside
// them), under the sandbox's spill root, the parent of its spill directory.
// One spill directory per working directory lies under the root, so the
// total covers every working directory of the sandbox.
//
// A writer of a new file calls Start, which measures the root (its files
// and those of its subdirectories, the newest sizes on disk) and registers
// the file, then Take before each write: what the total leaves is shared by
// the files being written in this process at once. Files written at the same
// time by another process are counted as far as the measure at Start saw
// them. A file the total cuts ends with Note's line, and its writer reports
// an error wrapping ErrTotal.
package savedout
