package ops

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
)

// Root is a directory a confined backend allows, on the target.
type Root struct {
	Path     string // absolute; resolved on the target when the confinement is set up
	ReadOnly bool
}

// Confiner is implemented by backends that confine file operations in the
// target itself, resolving each path and using it in one step (so a
// symbolic link swapped between a check and the use cannot lead outside).
// Confine returns a view of the backend whose file operations, searches and
// command working directories must lie under one of roots (write operations
// under a writable one); refusals are *fs.PathError values (Op "confine")
// wrapping an *OutsideRootError. Closing the view closes the backend.
type Confiner interface {
	Backend
	Confine(ctx context.Context, roots []Root) (Backend, error)
}

// OutsideRootError reports a path refused by confinement. It satisfies
// errors.Is(err, fs.ErrPermission) and tells the model which roots exist.
type OutsideRootError struct {
	Path     string // the path as the tool gave it
	Resolved string // where it leads on the target
	Write    bool   // a write was refused under a read-only root
	Roots    []Root
}

func (e *OutsideRootError) Error() string { return e.UserMessage() }

// UserMessage is the text the model sees.
func (e *OutsideRootError) UserMessage() string {
	var b strings.Builder
	if e.Write {
		fmt.Fprintf(&b, "Path %s is in a read-only root of the sandbox", e.Path)
	} else {
		fmt.Fprintf(&b, "Path %s is outside the sandbox", e.Path)
	}
	if e.Resolved != "" && e.Resolved != e.Path {
		fmt.Fprintf(&b, " (it resolves to %s)", e.Resolved)
	}
	b.WriteString(". Allowed roots: ")
	n := 0
	for _, r := range e.Roots {
		if r.Path == "" {
			// A root the target could not resolve (gone since) names
			// nothing the model could use.
			continue
		}
		if n > 0 {
			b.WriteString(", ")
		}
		n++
		b.WriteString(r.Path)
		if r.ReadOnly {
			b.WriteString(" (read-only)")
		}
	}
	if n == 0 {
		b.WriteString("none")
	}
	b.WriteString(".")
	return b.String()
}

// Is makes the error match fs.ErrPermission.
func (e *OutsideRootError) Is(target error) bool { return target == fs.ErrPermission }
