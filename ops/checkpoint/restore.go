package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// PreRestore prefixes the names of the checkpoints a restore makes first.
const PreRestore = "pre-restore-"

// journal marks a restore in progress.
type journal struct {
	ID   string `json:"id"`
	Root string `json:"root"`
}

func (s *Store) journalPath() string { return filepath.Join(s.dir, "journal") }

// Restore makes the tree under root the checkpoint ref names, having
// first checkpointed the tree as it was (the second result).
func (s *Store) Restore(root, ref string) (Checkpoint, Result, error) {
	unlock, err := s.begin()
	if err != nil {
		return Checkpoint{}, Result{}, err
	}
	defer unlock()
	tc, err := s.resolve(ref)
	if err != nil {
		return tc, Result{}, err
	}
	_, want, err := readManifest(s.manifestPath(tc.ID), false)
	if err != nil {
		return tc, Result{}, err
	}
	all, err := s.list()
	if err != nil {
		return tc, Result{}, err
	}
	n := 0
	for _, c := range all {
		if k, err := strconv.Atoi(strings.TrimPrefix(c.Name, PreRestore)); err == nil && strings.HasPrefix(c.Name, PreRestore) && k > n {
			n = k
		}
	}
	pre, err := s.create(root, Options{Name: PreRestore + strconv.Itoa(n+1), Exclude: tc.Exclude})
	if err != nil {
		return tc, pre, fmt.Errorf("checkpoint: recording the workspace before the restore: %w", err)
	}
	j, _ := json.Marshal(journal{ID: tc.ID, Root: root})
	if err := writeFileSync(s.journalPath(), j); err != nil {
		return tc, pre, fmt.Errorf("checkpoint: journal: %w", err)
	}
	if err := s.apply(root, want, tc.Exclude, pre.entries); err != nil {
		return tc, pre, err
	}
	if err := os.Remove(s.journalPath()); err != nil {
		return tc, pre, fmt.Errorf("checkpoint: journal: %w", err)
	}
	return tc, pre, nil
}

func writeFileSync(name string, data []byte) error {
	tmp := name + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := syncFile(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}

// recover completes a restore that was interrupted (the journal is
// there). Called with the lock held.
func (s *Store) recover() error {
	data, err := os.ReadFile(s.journalPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("checkpoint: journal: %w", err)
	}
	var j journal
	if json.Unmarshal(data, &j) != nil || !filepath.IsAbs(j.Root) {
		os.Remove(s.journalPath())
		return nil
	}
	c, want, err := readManifest(s.manifestPath(j.ID), false)
	if errors.Is(err, os.ErrNotExist) {
		return os.Remove(s.journalPath())
	}
	if err != nil {
		return err
	}
	if err := s.apply(j.Root, want, c.Exclude, nil); err != nil {
		return fmt.Errorf("checkpoint: completing an interrupted restore: %w", err)
	}
	return os.Remove(s.journalPath())
}

// apply makes the tree under root hold exactly want (paths matching
// exclude aside), writing through an os.Root: never outside root.
func (s *Store) apply(root string, want []Entry, exclude []string, live []Entry) error {
	r, err := os.OpenRoot(root)
	if err != nil {
		return fmt.Errorf("checkpoint: workspace: %w", err)
	}
	defer r.Close()
	if live == nil {
		if live, err = s.scanLive(root, exclude); err != nil {
			return err
		}
	}
	// Directories must be writable while their entries change.
	for _, e := range live {
		if e.Type == Dir && e.Mode&0o700 != 0o700 {
			if err := r.Chmod(e.Path, os.FileMode(e.Mode|0o700)); err != nil {
				return fmt.Errorf("checkpoint: restore %s: %w", e.Path, errors.Unwrap(err))
			}
		}
	}
	if rfi, err := os.Stat(root); err == nil && modeBits(rfi)&0o700 != 0o700 {
		os.Chmod(root, rfi.Mode().Perm()|0o700)
	}
	changes := compare(live, want)
	// Removals, children before their directories.
	for i := len(changes) - 1; i >= 0; i-- {
		c := changes[i]
		if c.Status != 'D' {
			continue
		}
		if err := r.Remove(c.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
			if c.Old.Type == Dir && errors.Is(err, syscall.ENOTEMPTY) {
				continue // excluded paths inside it stay
			}
			return fmt.Errorf("checkpoint: restore: remove %s: %w", c.Path, errors.Unwrap(err))
		}
	}
	buf := make([]byte, 256<<10)
	for _, c := range changes {
		if c.Status == 'D' {
			continue
		}
		e := c.New
		switch {
		case e.Type == Dir:
			if c.Status == 'A' {
				if err := r.Mkdir(e.Path, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
					return fmt.Errorf("checkpoint: restore %s: %w", e.Path, errors.Unwrap(err))
				}
			}
		case e.Type == File && c.Status == 'M' && c.Old.Blob == e.Blob:
			if err := r.Chmod(e.Path, fileMode(e.Mode)); err != nil {
				return fmt.Errorf("checkpoint: restore %s: %w", e.Path, errors.Unwrap(err))
			}
		case e.Type == File:
			if err := s.writeFile(r, e, buf); err != nil {
				return err
			}
		case e.Type == Symlink:
			tmp := tempName(e.Path)
			if err := r.Symlink(e.Link, tmp); err != nil {
				return fmt.Errorf("checkpoint: restore %s: %w", e.Path, errors.Unwrap(err))
			}
			if err := r.Rename(tmp, e.Path); err != nil {
				r.Remove(tmp)
				return fmt.Errorf("checkpoint: restore %s: %w", e.Path, errors.Unwrap(err))
			}
		}
	}
	// Directory modes last (a read-only directory is filled first).
	dirs := make([]Entry, 0)
	for _, e := range want {
		if e.Type == Dir {
			dirs = append(dirs, e)
		}
	}
	sort.Slice(dirs, func(i, j int) bool { return dirs[i].Path > dirs[j].Path })
	for _, e := range dirs {
		fi, err := r.Lstat(e.Path)
		if err != nil || !fi.IsDir() {
			return fmt.Errorf("checkpoint: restore %s: not a directory after the restore", e.Path)
		}
		if modeBits(fi) != e.Mode {
			if err := r.Chmod(e.Path, fileMode(e.Mode)); err != nil {
				return fmt.Errorf("checkpoint: restore %s: %w", e.Path, errors.Unwrap(err))
			}
		}
	}
	return nil
}

// fileMode converts Unix mode bits to an fs.FileMode for Chmod.
func fileMode(m uint32) os.FileMode {
	fm := os.FileMode(m & 0o777)
	if m&syscall.S_ISUID != 0 {
		fm |= os.ModeSetuid
	}
	if m&syscall.S_ISGID != 0 {
		fm |= os.ModeSetgid
	}
	if m&syscall.S_ISVTX != 0 {
		fm |= os.ModeSticky
	}
	return fm
}

func tempName(p string) string {
	dir, base := path.Split(p)
	return dir + ".pi-restore-" + newID() + "-" + truncate(base, 32)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// writeFile replaces e's file with its blob: a temporary file beside it,
// the blob's SHA-256 verified while copying, renamed over it.
func (s *Store) writeFile(r *os.Root, e *Entry, buf []byte) error {
	bf, v, err := s.openBlob(e.Blob)
	if err != nil {
		return fmt.Errorf("checkpoint: restore %s: blob %s: %w", e.Path, e.Blob, errors.Unwrap(err))
	}
	defer bf.Close()
	tmp := tempName(e.Path)
	f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("checkpoint: restore %s: %w", e.Path, errors.Unwrap(err))
	}
	_, err = io.CopyBuffer(f, v, buf)
	if err == nil && !v.check(e.Blob) {
		err = fmt.Errorf("its stored content does not match its SHA-256 (the store is damaged)")
	}
	if err == nil {
		err = f.Chmod(fileMode(e.Mode))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = r.Rename(tmp, e.Path)
	}
	if err != nil {
		r.Remove(tmp)
		return fmt.Errorf("checkpoint: restore %s: %w", e.Path, err)
	}
	return nil
}
