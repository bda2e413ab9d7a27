package ops

import "testing"

// TestOutsideRootMessageSkipsEmptyRoots: a root without a path (one the
// target could not resolve) used to print as "Allowed roots: /workspace, ".
func TestOutsideRootMessageSkipsEmptyRoots(t *testing.T) {
	e := &OutsideRootError{Path: "/x", Roots: []Root{{Path: "/workspace"}, {Path: ""}, {Path: "/ro", ReadOnly: true}}}
	if got, want := e.UserMessage(), "Path /x is outside the sandbox. Allowed roots: /workspace, /ro (read-only)."; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	e = &OutsideRootError{Path: "/x", Roots: []Root{{Path: ""}}}
	if got, want := e.UserMessage(), "Path /x is outside the sandbox. Allowed roots: none."; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}
