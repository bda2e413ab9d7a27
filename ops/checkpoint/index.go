package checkpoint

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The index remembers, for each file of the last checkpoint, its stat data
// and blob: a file whose stat data did not change is not read again.

// racyMargin: a file modified this close to (or after) the index's time
// may change again within the same timestamp tick; it is read again.
const racyMargin = time.Second

type indexEntry struct {
	size, mtime, ctime int64
	ino, dev           uint64
	mode               uint32
	blob               string
}

func statEntry(st *syscall.Stat_t) indexEntry {
	if st == nil {
		return indexEntry{mtime: -1}
	}
	return indexEntry{
		size:  st.Size,
		mtime: st.Mtim.Nano(),
		ctime: st.Ctim.Nano(),
		ino:   st.Ino,
		dev:   uint64(st.Dev),
		mode:  st.Mode,
	}
}

func (a indexEntry) same(b indexEntry) bool {
	return a.size == b.size && a.mtime == b.mtime && a.ctime == b.ctime && a.ino == b.ino && a.dev == b.dev && a.mode == b.mode && a.mtime >= 0
}

type index struct {
	time    int64 // when the capture that wrote it started
	entries map[string]indexEntry
}

func (x index) trusted(e indexEntry) bool {
	return e.mtime < x.time-int64(racyMargin)
}

func (s *Store) indexPath() string { return filepath.Join(s.dir, "index") }

// loadIndex reads the index; a missing or bad one is empty (every file is
// read).
func (s *Store) loadIndex() index {
	x := index{entries: map[string]indexEntry{}}
	f, err := os.Open(s.indexPath())
	if err != nil {
		return x
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	if !sc.Scan() {
		return x
	}
	if x.time, err = strconv.ParseInt(sc.Text(), 10, 64); err != nil {
		return index{entries: map[string]indexEntry{}}
	}
	for sc.Scan() {
		var e indexEntry
		var q string
		line := sc.Text()
		i := strings.IndexByte(line, '"')
		if i < 0 {
			return index{entries: map[string]indexEntry{}}
		}
		if _, err := fmt.Sscanf(line[:i], "%d %d %d %d %d %o %s ", &e.size, &e.mtime, &e.ctime, &e.ino, &e.dev, &e.mode, &e.blob); err != nil || !validBlob(e.blob) {
			return index{entries: map[string]indexEntry{}}
		}
		if q, err = strconv.Unquote(line[i:]); err != nil {
			return index{entries: map[string]indexEntry{}}
		}
		x.entries[q] = e
	}
	return x
}

// saveIndex replaces the index; failing, it removes it.
func (s *Store) saveIndex(start time.Time, entries map[string]indexEntry) {
	tmp, err := os.CreateTemp(filepath.Join(s.dir, "tmp"), "index-")
	if err != nil {
		os.Remove(s.indexPath())
		return
	}
	bw := bufio.NewWriter(tmp)
	fmt.Fprintf(bw, "%d\n", start.UnixNano())
	for p, e := range entries {
		fmt.Fprintf(bw, "%d %d %d %d %d %o %s %s\n", e.size, e.mtime, e.ctime, e.ino, e.dev, e.mode, e.blob, strconv.Quote(p))
	}
	err = bw.Flush()
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), s.indexPath())
	}
	if err != nil {
		os.Remove(tmp.Name())
		os.Remove(s.indexPath())
	}
}

// dropIndex forgets the index (blobs it names may be gone).
func (s *Store) dropIndex() { os.Remove(s.indexPath()) }
