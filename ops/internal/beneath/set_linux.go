//go:build linux

package beneath

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// Set is a set of opened roots.
type Set struct {
	roots []root
	top   int // O_PATH fd of "/", where walks start
	once  sync.Once
}

type root struct {
	Root           // Path is the real path
	fd    int      // O_PATH directory fd
	comps []string // Path's elements
}

// Open resolves every root to its real path (following links, as the caller
// means them) and opens it. Roots must be absolute, existing directories.
// The order matters: the first root that contains a location decides
// whether it may be written.
func Open(roots []Root) (*Set, error) {
	if len(roots) == 0 {
		return nil, errors.New("beneath: at least one root is needed")
	}
	top, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("beneath: %w", &fs.PathError{Op: "open", Path: "/", Err: err})
	}
	s := &Set{top: top}
	for _, r := range roots {
		if !path.IsAbs(r.Path) {
			s.Close()
			return nil, fmt.Errorf("beneath: root %q is not absolute", r.Path)
		}
		rp, err := filepath.EvalSymlinks(path.Clean(r.Path))
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("beneath: root %s: %w", r.Path, err)
		}
		fd, err := unix.Open(rp, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("beneath: root %s: %w", r.Path, &fs.PathError{Op: "open", Path: rp, Err: err})
		}
		s.roots = append(s.roots, root{Root: Root{Path: rp, ReadOnly: r.ReadOnly}, fd: fd, comps: split(rp)})
	}
	return s, nil
}

// Roots returns the roots with their real paths, in the order given to Open.
func (s *Set) Roots() []Root {
	rs := make([]Root, len(s.roots))
	for i, r := range s.roots {
		rs[i] = r.Root
	}
	return rs
}

// Close closes the roots. It is safe to call twice.
func (s *Set) Close() error {
	s.once.Do(func() {
		for _, r := range s.roots {
			unix.Close(r.fd)
		}
		unix.Close(s.top)
	})
	return nil
}

// rootAt returns the position of the root whose real path is p.
func (s *Set) rootAt(p string) (pos, bool) {
	for _, r := range s.roots {
		if r.Path == p {
			return pos{fd: r.fd, real: p}, true
		}
	}
	return pos{}, false
}

// startAt is where a walk of the absolute path with elements comps starts:
// the deepest root whose path is a leading part of it (a root's path is
// real, so walking it again would lead to the same directory, unless it was
// swapped since Open: the root's fd is what the root means), else "/". It
// returns the elements left to walk.
func (s *Set) startAt(comps []string) (pos, []string) {
	best, n := pos{fd: s.top, real: "/"}, 0
	for _, r := range s.roots {
		if len(r.comps) >= n && len(r.comps) <= len(comps) && slices.Equal(r.comps, comps[:len(r.comps)]) {
			if len(r.comps) > n || best.fd == s.top {
				best, n = pos{fd: r.fd, real: r.Path}, len(r.comps)
			}
		}
	}
	return best, comps[n:]
}

// judge checks the resolved location real of name.
func (s *Set) judge(name, real string, write bool) error {
	for _, r := range s.roots {
		if within(real, r.Path) {
			if write && r.ReadOnly {
				return &fs.PathError{Op: "confine", Path: name, Err: &OutsideError{Path: name, Resolved: real, Write: true}}
			}
			return nil
		}
	}
	return &fs.PathError{Op: "confine", Path: name, Err: &OutsideError{Path: name, Resolved: real}}
}
