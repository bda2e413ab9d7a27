package beneath

import (
	"fmt"
	"io/fs"
	"strings"
)

// Root is a directory operations are confined to.
type Root struct {
	Path     string // absolute; Open resolves it to its real path
	ReadOnly bool
}

// OutsideError reports a path refused by confinement: it leads outside
// every root, or a write leads into a read-only root. It satisfies
// errors.Is(err, fs.ErrPermission).
type OutsideError struct {
	Path     string // the path as the caller gave it
	Resolved string // where it leads (a missing tail appended lexically)
	Write    bool   // a write was refused under a read-only root
}

func (e *OutsideError) Error() string {
	var b strings.Builder
	if e.Write {
		fmt.Fprintf(&b, "beneath: %s is in a read-only root", e.Path)
	} else {
		fmt.Fprintf(&b, "beneath: %s is outside every root", e.Path)
	}
	if e.Resolved != "" && e.Resolved != e.Path {
		fmt.Fprintf(&b, " (it resolves to %s)", e.Resolved)
	}
	return b.String()
}

// Is makes the error match fs.ErrPermission.
func (e *OutsideError) Is(target error) bool { return target == fs.ErrPermission }

func within(p, root string) bool {
	if root == "/" {
		return true
	}
	return p == root || strings.HasPrefix(p, root+"/")
}
