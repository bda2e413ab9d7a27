package proto

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/search"
)

// Error is a failure on the wire. Kind says how the client rebuilds it:
//   - "path": a *fs.PathError{Op, Path, ops.Errno(Errno)}
//   - "outside": a confinement refusal (*ops.OutsideRootError in a
//     *fs.PathError with Op "confine")
//   - "regex", "glob": an invalid grep pattern or glob (the search
//     package's *PatternError, *GlobError)
//   - "pattern": another invalid pattern (ops.ErrBadPattern)
//   - "unsupported": ops.ErrUnsupported
//   - "conflict": an edit whose file changed under it (ErrConflict)
//   - "locked": an edit that gave up waiting for its directory's lock
//     (*ops.LockedError, Path the directory)
//   - anything else: a plain error with Msg
type Error struct {
	Kind     string `json:"kind"`
	Op       string `json:"op,omitempty"`
	Path     Str    `json:"path,omitempty"`
	Errno    string `json:"errno,omitempty"`
	Resolved Str    `json:"resolved,omitempty"`
	Write    bool   `json:"write,omitempty"`
	Msg      string `json:"msg,omitempty"`
}

// FromError encodes err.
func FromError(err error) *Error {
	if err == nil {
		return nil
	}
	var (
		pe0 *search.PatternError
		ge0 *search.GlobError
	)
	switch {
	case errors.As(err, &pe0):
		return &Error{Kind: "regex", Path: Str(pe0.Pattern), Msg: pe0.Detail}
	case errors.As(err, &ge0):
		return &Error{Kind: "glob", Path: Str(ge0.Glob), Msg: ge0.Detail}
	}
	var le *ops.LockedError
	if errors.As(err, &le) {
		return &Error{Kind: "locked", Path: Str(le.Dir)}
	}
	var oe *ops.OutsideRootError
	if errors.As(err, &oe) {
		return &Error{Kind: "outside", Path: Str(oe.Path), Resolved: Str(oe.Resolved), Write: oe.Write}
	}
	switch {
	case errors.Is(err, ops.ErrBadPattern):
		return &Error{Kind: "pattern", Msg: err.Error()}
	case errors.Is(err, ops.ErrUnsupported):
		return &Error{Kind: "unsupported", Msg: err.Error()}
	case errors.Is(err, ops.ErrConflict):
		var pe *fs.PathError
		errors.As(err, &pe)
		p := ""
		if pe != nil {
			p = pe.Path
		}
		return &Error{Kind: "conflict", Path: Str(p), Msg: err.Error()}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		if c := ops.ErrnoOf(pe.Err); c != "" {
			return &Error{Kind: "path", Op: pe.Op, Path: Str(pe.Path), Errno: string(c)}
		}
	}
	return &Error{Kind: "other", Msg: err.Error()}
}

// MaxErrorText bounds an error text the client takes from the target (a
// message, a path): longer ones are cut.
const MaxErrorText = 4 << 10

// ClipText cuts s to at most MaxErrorText bytes, saying so.
func ClipText(s string) string {
	const note = " [cut]"
	if len(s) <= MaxErrorText {
		return s
	}
	return s[:MaxErrorText-len(note)] + note
}

// Err decodes e, its texts cut to MaxErrorText. roots fills an
// OutsideRootError's list of roots.
func (e *Error) Err(roots []ops.Root) error {
	if e == nil {
		return nil
	}
	c := *e
	c.Op, c.Path, c.Errno, c.Resolved, c.Msg = ClipText(c.Op), Str(ClipText(string(c.Path))), ClipText(c.Errno), Str(ClipText(string(c.Resolved))), ClipText(c.Msg)
	e = &c
	switch e.Kind {
	case "path":
		return ops.PathError(e.Op, string(e.Path), ops.Errno(e.Errno))
	case "outside":
		return &fs.PathError{Op: "confine", Path: string(e.Path), Err: &ops.OutsideRootError{Path: string(e.Path), Resolved: string(e.Resolved), Write: e.Write, Roots: roots}}
	case "regex":
		return &search.PatternError{Pattern: string(e.Path), Detail: e.Msg}
	case "glob":
		return &search.GlobError{Glob: string(e.Path), Detail: e.Msg}
	case "pattern":
		return fmt.Errorf("%w: %s", ops.ErrBadPattern, e.Msg)
	case "unsupported":
		return fmt.Errorf("%w: %s", ops.ErrUnsupported, e.Msg)
	case "conflict":
		return fmt.Errorf("%w: %s", ops.ErrConflict, e.Path)
	case "locked":
		return &ops.LockedError{Dir: string(e.Path)}
	}
	return errors.New(e.Msg)
}
