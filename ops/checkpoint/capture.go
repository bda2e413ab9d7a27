package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// Options says what a checkpoint captures.
type Options struct {
	Name string
	// Exclude holds glob patterns (path.Match): one without "/" matches
	// a base name at any depth, one with "/" the whole path from the root.
	// A matching directory is excluded with everything under it.
	Exclude []string
	// Auto marks a checkpoint taken after a tool call, Call is the call's
	// id. The newest AutoKeep automatic checkpoints are kept; older ones
	// are removed as new ones are made.
	Auto bool
	Call string
}

// AutoKeep is how many automatic checkpoints a store keeps at least; it
// prunes the older ones once there are autoSlack more.
const (
	AutoKeep  = 100
	autoSlack = 10
)

// Result is a checkpoint made.
type Result struct {
	Checkpoint
	// Skipped lists the paths that are neither files, directories nor
	// links (FIFOs, sockets, devices): not captured.
	Skipped []string
	// entries are the checkpoint's (a restore compares the tree with them).
	entries []Entry
}

// CheckExcludes refuses a malformed pattern.
func CheckExcludes(pats []string) error {
	for _, p := range pats {
		if _, err := path.Match(p, ""); err != nil || p == "" {
			return fmt.Errorf("checkpoint: %w: --exclude %q is not a valid glob pattern", ops.ErrConfig, p)
		}
	}
	return nil
}

func excluded(pats []string, rel string) bool {
	base := path.Base(rel)
	for _, p := range pats {
		p = strings.TrimSuffix(strings.TrimPrefix(p, "/"), "/")
		target := rel
		if !strings.Contains(p, "/") {
			target = base
		}
		if ok, _ := path.Match(p, target); ok {
			return true
		}
	}
	return false
}

// Create checkpoints the tree under root.
func (s *Store) Create(root string, opt Options) (Result, error) {
	if err := CheckExcludes(opt.Exclude); err != nil {
		return Result{}, err
	}
	unlock, err := s.begin()
	if err != nil {
		return Result{}, err
	}
	defer unlock()
	return s.create(root, opt)
}

func relOrDot(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}

// modeBits is the Unix permission, setuid, setgid and sticky bits of fi.
func modeBits(fi os.FileInfo) uint32 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Mode & 0o7777
	}
	return uint32(fi.Mode().Perm())
}

func (s *Store) create(root string, opt Options) (Result, error) {
	start := time.Now()
	infos, skipped, err := s.walk(root, opt.Exclude)
	if err != nil {
		return Result{}, err
	}
	bud, err := s.newBudget()
	if err != nil {
		return Result{}, err
	}
	defer bud.undo()
	idx := s.loadIndex()
	next := make(map[string]indexEntry, len(infos))
	buf := make([]byte, 256<<10)
	entries := make([]Entry, 0, len(infos))
	var added int64
	store := func(f *os.File, rel string) (string, int64, error) {
		sum, n, isNew, err := s.putBlob(f, buf)
		if err != nil {
			return "", 0, fmt.Errorf("checkpoint: %s: %w", rel, err)
		}
		if isNew {
			added += n
			if err := bud.add(sum, n); err != nil {
				return "", 0, err
			}
		}
		return sum, n, nil
	}
	for _, in := range infos {
		e, err := entryOf(root, in, idx, store)
		if err != nil {
			return Result{}, err
		}
		if e.Type == File {
			ie := in.ie
			ie.size, ie.blob = e.Size, e.Blob
			next[in.rel] = ie
		}
		entries = append(entries, e)
	}
	all, err := s.list()
	if err != nil {
		return Result{}, err
	}
	c := Checkpoint{ID: newID(), Name: opt.Name, Time: start.UTC(), Files: len(entries), Bytes: added, Exclude: opt.Exclude, Auto: opt.Auto, Call: opt.Call}
	if len(all) > 0 {
		c.Seq = all[len(all)-1].Seq + 1
	}
	if err := writeManifest(filepath.Join(s.dir, "tmp"), s.manifestPath(c.ID), c, entries); err != nil {
		return Result{}, fmt.Errorf("checkpoint: write manifest: %w", err)
	}
	bud.keep()
	s.saveIndex(start, next)
	if opt.Auto {
		if err := s.pruneAuto(append(all, c)); err != nil {
			return Result{Checkpoint: c, Skipped: skipped}, err
		}
	}
	return Result{Checkpoint: c, Skipped: skipped, entries: entries}, nil
}

// entryOf describes in, found under root by walk: a link's target is
// read; a file's blob comes from the index when its stat data did not
// change, else from read, which hashes (and may store) the open file.
func entryOf(root string, in walkInfo, idx index, read func(f *os.File, rel string) (string, int64, error)) (Entry, error) {
	e := Entry{Path: in.rel, Mode: in.bits()}
	p := filepath.Join(root, filepath.FromSlash(in.rel))
	switch {
	case in.isDir():
		e.Type = Dir
	case in.isLink():
		e.Type = Symlink
		link, err := os.Readlink(p)
		if err != nil {
			return e, fmt.Errorf("checkpoint: cannot read link %s: %w", in.rel, errors.Unwrap(err))
		}
		e.Link, e.Size = link, int64(len(link))
	default:
		e.Type = File
		if old, ok := idx.entries[in.rel]; ok && idx.trusted(old) && old.same(in.ie) {
			e.Blob, e.Size = old.blob, old.size
			return e, nil
		}
		f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err != nil {
			return e, fmt.Errorf("checkpoint: cannot read %s: %w", in.rel, errors.Unwrap(err))
		}
		defer f.Close()
		e.Blob, e.Size, err = read(f, in.rel)
		return e, err
	}
	return e, nil
}

// pruneAuto removes the oldest automatic checkpoints of all (oldest
// first) once more than AutoKeep+autoSlack are there, down to AutoKeep,
// and the blobs only they used (in batches: collecting reads every
// manifest).
func (s *Store) pruneAuto(all []Checkpoint) error {
	var auto []Checkpoint
	for _, c := range all {
		if c.Auto {
			auto = append(auto, c)
		}
	}
	if len(auto) <= AutoKeep+autoSlack {
		return nil
	}
	for _, c := range auto[:len(auto)-AutoKeep] {
		if err := os.Remove(s.manifestPath(c.ID)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("checkpoint: pruning automatic checkpoint %s: %w", c.ID, err)
		}
	}
	return s.collect()
}
