package sandbox

// Config is a sandbox's confinement and policy, for any backend. The zero
// value confines file operations to the working directory and the spill
// directory and enforces no policy.
type Config struct {
	// Unconfined turns path confinement off. By default file operations are
	// confined to the backend's working directory, its spill directory and
	// the extra roots.
	Unconfined bool
	// AllowRoots are extra read-write roots, and ReadOnlyRoots extra
	// read-only ones: absolute target paths.
	AllowRoots    []string
	ReadOnlyRoots []string

	// Policy is the command policy, environment allow-list, redaction and
	// audit log. The zero value enforces nothing.
	Policy Policy

	// AutoCheckpoint takes a checkpoint of the working directory after
	// every executed write, edit and bash call of the sandbox's loops,
	// named "call-N" (N counts the executed calls from 1) and found by the
	// call's tool-call id too, so that Diff("call-3", "call-7") shows what
	// those steps did and Restore("call-5") undoes what followed. The
	// newest 100 automatic checkpoints are kept. A sandbox that cannot keep
	// checkpoints (no helper, a one-shot container) is refused when it
	// opens; a checkpoint that fails later never fails the call: it is told
	// to AutoCheckpointNote (nil: not told).
	AutoCheckpoint     bool
	AutoCheckpointNote func(string)
}
