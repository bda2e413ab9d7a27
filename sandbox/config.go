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
}
