package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
)

// Change is one path that differs between two trees.
type Change struct {
	Path string
	// Status is git's letter: 'A' added, 'D' deleted, 'M' modified (content,
	// mode or link target), 'T' type changed between file and link. A
	// path that turns from or into a directory is a 'D' and an 'A'.
	Status byte
	Old    *Entry // nil when added
	New    *Entry // nil when deleted
}

// What says what changed: "added", "deleted", "type", "content", "mode",
// "content+mode" or "link".
func (c Change) What() string {
	switch {
	case c.Status == 'A':
		return "added"
	case c.Status == 'D':
		return "deleted"
	case c.Status == 'T':
		return "type"
	case c.Old.Type == Symlink:
		return "link"
	case c.Old.Blob != c.New.Blob && c.Old.Mode != c.New.Mode:
		return "content+mode"
	case c.Old.Blob != c.New.Blob:
		return "content"
	}
	return "mode"
}

// compare lists the changes from a to b, both sorted by path.
func compare(a, b []Entry) []Change {
	var out []Change
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j >= len(b) || i < len(a) && a[i].Path < b[j].Path:
			out = append(out, Change{Path: a[i].Path, Status: 'D', Old: &a[i]})
			i++
		case i >= len(a) || b[j].Path < a[i].Path:
			out = append(out, Change{Path: b[j].Path, Status: 'A', New: &b[j]})
			j++
		default:
			x, y := &a[i], &b[j]
			i++
			j++
			switch {
			case x.Type != y.Type && (x.Type == Dir || y.Type == Dir):
				out = append(out, Change{Path: x.Path, Status: 'D', Old: x}, Change{Path: y.Path, Status: 'A', New: y})
			case x.Type != y.Type:
				out = append(out, Change{Path: x.Path, Status: 'T', Old: x, New: y})
			case x.Mode != y.Mode && x.Type != Symlink, x.Blob != y.Blob, x.Link != y.Link:
				out = append(out, Change{Path: x.Path, Status: 'M', Old: x, New: y})
			}
		}
	}
	return out
}

// Diff is the outcome of comparing two trees.
type Diff struct {
	From    Checkpoint
	To      *Checkpoint // nil: the workspace as it is
	Changes []Change
}

// Changes compares checkpoint from ("": the newest) with checkpoint to,
// or with the tree under root when to is "".
func (s *Store) Changes(root, from, to string) (Diff, error) {
	unlock, err := s.begin()
	if err != nil {
		return Diff{}, err
	}
	defer unlock()
	d, _, _, err := s.changes(root, from, to)
	return d, err
}

// changes also returns both sides' entries.
func (s *Store) changes(root, from, to string) (Diff, []Entry, []Entry, error) {
	var d Diff
	fc, err := s.resolve(from)
	if err != nil {
		return d, nil, nil, err
	}
	d.From = fc
	_, a, err := readManifest(s.manifestPath(fc.ID), false)
	if err != nil {
		return d, nil, nil, err
	}
	var b []Entry
	if to != "" {
		tc, err := s.resolve(to)
		if err != nil {
			return d, nil, nil, err
		}
		d.To = &tc
		if _, b, err = readManifest(s.manifestPath(tc.ID), false); err != nil {
			return d, nil, nil, err
		}
	} else if b, err = s.scanLive(root, fc.Exclude); err != nil {
		return d, nil, nil, err
	}
	d.Changes = compare(a, b)
	return d, a, b, nil
}

// scanLive lists the tree under root as entries, a file's blob its
// SHA-256 (from the index when its stat data did not change); nothing is
// stored.
func (s *Store) scanLive(root string, exclude []string) ([]Entry, error) {
	infos, _, err := s.walk(root, exclude)
	if err != nil {
		return nil, err
	}
	idx := s.loadIndex()
	buf := make([]byte, 256<<10)
	out := make([]Entry, 0, len(infos))
	hash := func(f *os.File, rel string) (string, int64, error) {
		h := sha256.New()
		n, err := io.CopyBuffer(h, f, buf)
		if err != nil {
			return "", 0, fmt.Errorf("checkpoint: cannot read %s: %w", rel, err)
		}
		return hex.EncodeToString(h.Sum(nil)), n, nil
	}
	for _, in := range infos {
		e, err := entryOf(root, in, idx, hash)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}
