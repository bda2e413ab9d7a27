package checkpoint

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// LockWait bounds the wait for another operation on the same store.
var LockWait = 30 * time.Second

// ErrNotFound is an id or name that names no checkpoint of the store.
var ErrNotFound = ops.ErrUnknownCheckpoint

// ErrNone: the store holds no checkpoint yet.
var ErrNone = ops.ErrNoCheckpoint

// durable makes manifests and the journal reach the disk before they
// count (fsync). A blob is not synced: after a power loss a damaged one
// fails the restore that needs it, naming the file, as its SHA-256 is
// checked. Tests turn it off; a process killed at any point needs no
// fsync, only the renames.
var durable = true

func syncFile(f *os.File) error {
	if !durable {
		return nil
	}
	return f.Sync()
}

// Store is a checkpoint store: a directory of the machine this runs on.
type Store struct {
	dir string
}

// Open opens the store in dir, creating it (mode 0700) when missing.
func Open(dir string) (*Store, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("checkpoint: store %q is not an absolute path", dir)
	}
	dir = filepath.Clean(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("checkpoint: store: %w", err)
	}
	for _, d := range []string{"blobs", "manifests", "tmp"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil && !os.IsExist(err) {
			return nil, fmt.Errorf("checkpoint: store: %w", err)
		}
	}
	return &Store{dir: dir}, nil
}

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// lock takes the store's lock, waiting at most LockWait; the returned
// function releases it.
func (s *Store) lock() (func(), error) {
	f, err := os.OpenFile(filepath.Join(s.dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: lock: %w", err)
	}
	deadline := time.Now().Add(LockWait)
	wait := time.Millisecond
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("checkpoint: lock: %w", err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("checkpoint: another checkpoint, diff or restore of this workspace held the lock for %v; try again when it ended", LockWait)
		}
		time.Sleep(wait)
		wait = min(wait*2, 100*time.Millisecond)
	}
}

// begin takes the lock and first completes a restore that was
// interrupted (recover); the returned function releases the lock.
func (s *Store) begin() (func(), error) {
	unlock, err := s.lock()
	if err != nil {
		return nil, err
	}
	if err := s.recover(); err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}

func (s *Store) blobPath(sum string) string {
	return filepath.Join(s.dir, "blobs", sum[:2], sum[2:])
}

func (s *Store) hasBlob(sum string) bool {
	fi, err := os.Lstat(s.blobPath(sum))
	return err == nil && fi.Mode().IsRegular()
}

func (s *Store) manifestPath(id string) string {
	return filepath.Join(s.dir, "manifests", id)
}

// putBlob copies r into the store while hashing it; it returns the blob's
// sum, its size and whether it was new.
func (s *Store) putBlob(r io.Reader, buf []byte) (sum string, n int64, added bool, err error) {
	tmp, err := os.CreateTemp(filepath.Join(s.dir, "tmp"), "blob-")
	if err != nil {
		return "", 0, false, err
	}
	defer func() {
		if tmp != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	h := sha256.New()
	n, err = io.CopyBuffer(io.MultiWriter(tmp, h), r, buf)
	if err != nil {
		return "", 0, false, err
	}
	sum = hex.EncodeToString(h.Sum(nil))
	if s.hasBlob(sum) {
		return sum, n, false, nil
	}
	if err := tmp.Close(); err != nil {
		return "", 0, false, err
	}
	if err := os.MkdirAll(filepath.Dir(s.blobPath(sum)), 0o700); err != nil {
		return "", 0, false, err
	}
	if err := os.Rename(tmp.Name(), s.blobPath(sum)); err != nil {
		return "", 0, false, err
	}
	tmp = nil
	return sum, n, true, nil
}

// verifier hashes what is read through it; at the end check compares.
type verifier struct {
	r io.Reader
	h hash.Hash
}

func (v *verifier) Read(p []byte) (int, error) {
	n, err := v.r.Read(p)
	v.h.Write(p[:n])
	return n, err
}

func (v *verifier) check(sum string) bool { return hex.EncodeToString(v.h.Sum(nil)) == sum }

// openBlob opens a blob for reading through a verifier.
func (s *Store) openBlob(sum string) (*os.File, *verifier, error) {
	f, err := os.Open(s.blobPath(sum))
	if err != nil {
		return nil, nil, err
	}
	return f, &verifier{r: f, h: sha256.New()}, nil
}

func newID() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// list reads every manifest's header, oldest first.
func (s *Store) list() ([]Checkpoint, error) {
	ents, err := os.ReadDir(filepath.Join(s.dir, "manifests"))
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	var out []Checkpoint
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		c, _, err := readManifest(s.manifestPath(e.Name()), true)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, nil
}

// List lists the store's checkpoints, oldest first.
func (s *Store) List() ([]Checkpoint, error) {
	unlock, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	return s.list()
}

// resolve finds the checkpoint ref names: an id, a unique prefix of one
// (4 characters or more), a name or else a tool-call id (the newest
// checkpoint with it); ""
// is the newest checkpoint.
func (s *Store) resolve(ref string) (Checkpoint, error) {
	all, err := s.list()
	if err != nil {
		return Checkpoint{}, err
	}
	if len(all) == 0 {
		return Checkpoint{}, fmt.Errorf("checkpoint: %w in this workspace (make one with pi-sandbox checkpoint)", ErrNone)
	}
	if ref == "" {
		return all[len(all)-1], nil
	}
	for _, c := range all {
		if c.ID == ref {
			return c, nil
		}
	}
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].Name == ref {
			return all[i], nil
		}
	}
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].Call == ref {
			return all[i], nil
		}
	}
	var found []Checkpoint
	if len(ref) >= 4 {
		for _, c := range all {
			if strings.HasPrefix(c.ID, ref) {
				found = append(found, c)
			}
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return Checkpoint{}, fmt.Errorf("checkpoint: %w %q in this workspace (see pi-sandbox checkpoint ls)", ErrNotFound, ref)
	}
	return Checkpoint{}, fmt.Errorf("checkpoint: %q is the start of %d checkpoint ids; give more of it", ref, len(found))
}

// Resolve finds a checkpoint by id, id prefix or name ("" : the newest).
func (s *Store) Resolve(ref string) (Checkpoint, error) {
	unlock, err := s.lock()
	if err != nil {
		return Checkpoint{}, err
	}
	defer unlock()
	return s.resolve(ref)
}

// Remove removes a checkpoint and the blobs no other one uses.
func (s *Store) Remove(ref string) (Checkpoint, error) {
	unlock, err := s.begin()
	if err != nil {
		return Checkpoint{}, err
	}
	defer unlock()
	c, err := s.resolve(ref)
	if err != nil {
		return c, err
	}
	if err := os.Remove(s.manifestPath(c.ID)); err != nil {
		return c, fmt.Errorf("checkpoint: remove %s: %w", c.ID, err)
	}
	return c, s.collect()
}

// collect removes the blobs no manifest references, and stray temporary
// files.
func (s *Store) collect() error {
	used := map[string]bool{}
	all, err := s.list()
	if err != nil {
		return err
	}
	for _, c := range all {
		_, ents, err := readManifest(s.manifestPath(c.ID), false)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if e.Blob != "" {
				used[e.Blob] = true
			}
		}
	}
	root := filepath.Join(s.dir, "blobs")
	dirs, err := os.ReadDir(root)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	for _, d := range dirs {
		blobs, err := os.ReadDir(filepath.Join(root, d.Name()))
		if err != nil {
			continue
		}
		for _, b := range blobs {
			if !used[d.Name()+b.Name()] {
				os.Remove(filepath.Join(root, d.Name(), b.Name()))
			}
		}
	}
	s.dropIndex()
	tmps, _ := os.ReadDir(filepath.Join(s.dir, "tmp"))
	for _, t := range tmps {
		os.Remove(filepath.Join(s.dir, "tmp", t.Name()))
	}
	return nil
}
