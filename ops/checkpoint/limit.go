package checkpoint

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A store may have a limit on the bytes of its contents (the blobs): a
// checkpoint or import that would pass it fails, keeping nothing it
// added, and earlier checkpoints stay as they are.

func (s *Store) limitPath() string { return filepath.Join(s.dir, "limit") }

// Limit is the store's limit in bytes; 0 when it has none.
func (s *Store) Limit() int64 {
	b, err := os.ReadFile(s.limitPath())
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// SetLimit sets the store's limit to n bytes (n > 0) or removes it
// (n < 0); 0 changes nothing.
func (s *Store) SetLimit(n int64) error {
	switch {
	case n < 0:
		if err := os.Remove(s.limitPath()); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("checkpoint: store limit: %w", err)
		}
	case n > 0:
		if err := writeFileSync(s.limitPath(), []byte(strconv.FormatInt(n, 10)+"\n")); err != nil {
			return fmt.Errorf("checkpoint: store limit: %w", err)
		}
	}
	return nil
}

// usage is the bytes of the store's blobs.
func (s *Store) usage() (int64, error) {
	var n int64
	err := filepath.WalkDir(filepath.Join(s.dir, "blobs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if fi, err := d.Info(); err == nil {
			n += fi.Size()
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("checkpoint: store usage: %w", err)
	}
	return n, nil
}

// budget tracks what one checkpoint or import adds to the store: the
// blobs it made (removed again when it fails) and the limit.
type budget struct {
	s       *Store
	limit   int64 // 0: none
	used    int64 // the store's bytes before
	added   int64
	blobs   []string
	settled bool
}

func (s *Store) newBudget() (*budget, error) {
	b := &budget{s: s, limit: s.Limit()}
	if b.limit > 0 {
		var err error
		if b.used, err = s.usage(); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// add records a new blob of n bytes; past the limit it fails.
func (b *budget) add(sum string, n int64) error {
	b.blobs = append(b.blobs, sum)
	b.added += n
	if b.limit > 0 && b.used+b.added > b.limit {
		return fmt.Errorf("checkpoint: the store's limit of %s would be passed (it holds %s and this adds at least %s): remove checkpoints (pi-sandbox checkpoint rm) or raise the limit (--store-limit)",
			byteSize(b.limit), byteSize(b.used), byteSize(b.added))
	}
	return nil
}

// keep marks the blobs as used by a checkpoint written.
func (b *budget) keep() { b.settled = true }

// undo removes the blobs added unless keep was called.
func (b *budget) undo() {
	if b.settled {
		return
	}
	for _, sum := range b.blobs {
		os.Remove(b.s.blobPath(sum))
	}
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
