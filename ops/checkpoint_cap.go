package ops

import (
	"context"
	"errors"
	"io"
	"time"
)

// ErrNoCheckpoint: the workspace has no checkpoint yet.
var ErrNoCheckpoint = errors.New("no checkpoint yet")

// ErrUnknownCheckpoint: an id or name that names no checkpoint of the
// workspace.
var ErrUnknownCheckpoint = errors.New("no such checkpoint")

// Checkpoint operations (CheckpointOp.Op).
const (
	CheckpointCreate  = "create"
	CheckpointList    = "list"
	CheckpointRemove  = "rm"
	CheckpointDiff    = "diff"    // the changes, in CheckpointResult.Changes
	CheckpointPatch   = "patch"   // a unified patch, written to out
	CheckpointStat    = "stat"    // git's --stat, written to out
	CheckpointRestore = "restore" // Ref; Pre is the checkpoint made first
	CheckpointExport  = "export"  // Ref, as a tar written to out
	CheckpointImport  = "import"  // a tar read from In; Name renames it
)

// CheckpointOp is one operation on a workspace's checkpoint store.
type CheckpointOp struct {
	Op    string
	Store string // the store's directory in the target
	Root  string // the workspace
	// Create: the checkpoint's name and glob patterns of paths left out.
	Name    string
	Exclude []string
	// Auto marks a create as automatic (after a tool call: pruned to the
	// newest 100), Call is the call's tool-call id.
	Auto bool
	Call string
	// StoreLimit, for create and import, first sets the store's limit on
	// its contents' bytes (> 0) or removes it (< 0); 0 keeps it.
	StoreLimit int64
	// Freeze, for create, stops the sandbox's processes (those the
	// helper's commands started and left running) while the checkpoint
	// is taken, and resumes them; CheckpointResult.Frozen counts them.
	Freeze bool
	// Ref is an id, a unique prefix of one or a name (the newest with it):
	// what rm and restore take, the diff's FROM ("": the newest).
	Ref string
	// To is the diff's TO ("": the workspace as it is).
	To string
	// In is the tar an import reads.
	In io.Reader
}

// CheckpointInfo describes a checkpoint.
type CheckpointInfo struct {
	ID      string    `json:"id"`
	Name    string    `json:"name,omitempty"`
	Time    time.Time `json:"time"`
	Files   int       `json:"files"`
	Bytes   int64     `json:"bytes_added"`
	Exclude []string  `json:"exclude,omitempty"`
	Auto    bool      `json:"auto,omitempty"`
	Call    string    `json:"call,omitempty"`
	// Frozen is how many processes a create with Freeze stopped while it
	// ran (not stored: only a create's result has it).
	Frozen int `json:"-"`
}

// CheckpointEntry is one side of a changed path.
type CheckpointEntry struct {
	Type string `json:"type"` // "file", "dir", "symlink"
	Mode uint32 `json:"mode"`
	Size int64  `json:"size"`
	Link string `json:"link,omitempty"`
}

// CheckpointChange is one changed path: Status is git's letter ("A", "D",
// "M", "T"); What says what changed ("added", "deleted", "type",
// "content", "mode", "content+mode", "link").
type CheckpointChange struct {
	Path   string           `json:"path"`
	Status string           `json:"status"`
	What   string           `json:"what"`
	Old    *CheckpointEntry `json:"old,omitempty"`
	New    *CheckpointEntry `json:"new,omitempty"`
}

// CheckpointResult is what an operation returns.
type CheckpointResult struct {
	Checkpoint *CheckpointInfo    // created, removed, restored
	Pre        *CheckpointInfo    // restore: the workspace before it
	Skipped    []string           // create: special files not captured
	List       []CheckpointInfo   // list, oldest first
	From, To   *CheckpointInfo    // diff (To nil: the workspace)
	Changes    []CheckpointChange // diff
	// Size bounds the tar an export writes (known before it starts).
	Size int64
	// Frozen is how many processes a create with Freeze stopped.
	Frozen int
}

// CheckpointFS is implemented by backends that checkpoint, compare and
// restore a workspace where it lives (the helper does the work in the
// target: no file content crosses for it). A patch or stat goes to out.
// Failures: ErrNoCheckpoint, ErrUnknownCheckpoint (wrapped), ErrConfig for
// a bad pattern.
type CheckpointFS interface {
	Backend
	Checkpoint(ctx context.Context, op *CheckpointOp, out io.Writer) (*CheckpointResult, error)
}
