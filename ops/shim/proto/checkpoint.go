package proto

// PathCheckpoint runs one checkpoint operation in the target (package
// ops/checkpoint): the request body is a CheckpointRequest; the reply
// (status 200) starts with one CheckpointReply as a JSON line, its Error
// set when the operation failed; a patch, stat or an export's tar follows
// it (an export's reply line gives the tar's bound, Size). An import's
// tar follows the request's JSON value in the body. A failure after the
// text started ends the stream with an error.
const PathCheckpoint = "/v1/checkpoint"

// CheckpointRequest is an ops.CheckpointOp.
type CheckpointRequest struct {
	Op      string `json:"op"`
	Store   Str    `json:"store"`
	Root    Str    `json:"root"`
	Name    Str    `json:"name,omitempty"`
	Exclude []Str  `json:"exclude,omitempty"`
	Ref     Str    `json:"ref,omitempty"`
	To      Str    `json:"to,omitempty"`
	Auto    bool   `json:"auto,omitempty"`
	Call    Str    `json:"call,omitempty"`
	Limit   int64  `json:"limit,omitempty"`
	Freeze  bool   `json:"freeze,omitempty"`
}

// CheckpointReply is an ops.CheckpointResult, or the error. ErrKind
// "none" and "unknown" stand for ops.ErrNoCheckpoint and
// ops.ErrUnknownCheckpoint, "config" for ops.ErrConfig.
type CheckpointReply struct {
	Error      *Error             `json:"error,omitempty"`
	ErrKind    string             `json:"err_kind,omitempty"`
	Checkpoint *CheckpointInfo    `json:"checkpoint,omitempty"`
	Pre        *CheckpointInfo    `json:"pre,omitempty"`
	Skipped    []Str              `json:"skipped,omitempty"`
	List       []CheckpointInfo   `json:"list,omitempty"`
	From       *CheckpointInfo    `json:"from,omitempty"`
	To         *CheckpointInfo    `json:"to,omitempty"`
	Changes    []CheckpointChange `json:"changes,omitempty"`
	Size       int64              `json:"size,omitempty"`
	Frozen     int                `json:"frozen,omitempty"`
}

// CheckpointInfo is an ops.CheckpointInfo, Time in Unix nanoseconds.
type CheckpointInfo struct {
	ID      string `json:"id"`
	Name    Str    `json:"name,omitempty"`
	Time    int64  `json:"time"`
	Files   int    `json:"files"`
	Bytes   int64  `json:"bytes"`
	Exclude []Str  `json:"exclude,omitempty"`
	Auto    bool   `json:"auto,omitempty"`
	Call    Str    `json:"call,omitempty"`
}

// CheckpointChange is an ops.CheckpointChange.
type CheckpointChange struct {
	Path   Str              `json:"path"`
	Status string           `json:"status"`
	What   string           `json:"what"`
	Old    *CheckpointEntry `json:"old,omitempty"`
	New    *CheckpointEntry `json:"new,omitempty"`
}

// CheckpointEntry is an ops.CheckpointEntry.
type CheckpointEntry struct {
	Type string `json:"type"`
	Mode uint32 `json:"mode"`
	Size int64  `json:"size"`
	Link Str    `json:"link,omitempty"`
}
