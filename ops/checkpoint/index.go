package checkpoint

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
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

func statEntry(st *unix.Stat_t) indexEntry {
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
		e, p, ok := parseIndexLine(sc.Text())
		if !ok {
			return index{entries: map[string]indexEntry{}}
		}
		x.entries[p] = e
	}
	return x
}

// parseIndexLine parses "SIZE MTIME CTIME INO DEV MODE(octal) BLOB
// "PATH"".
func parseIndexLine(line string) (e indexEntry, p string, ok bool) {
	var f [7]string
	rest := line
	for k := range f {
		i := strings.IndexByte(rest, ' ')
		if i < 0 {
			return e, "", false
		}
		f[k], rest = rest[:i], rest[i+1:]
	}
	var err [6]error
	e.size, err[0] = strconv.ParseInt(f[0], 10, 64)
	e.mtime, err[1] = strconv.ParseInt(f[1], 10, 64)
	e.ctime, err[2] = strconv.ParseInt(f[2], 10, 64)
	e.ino, err[3] = strconv.ParseUint(f[3], 10, 64)
	e.dev, err[4] = strconv.ParseUint(f[4], 10, 64)
	var mode uint64
	mode, err[5] = strconv.ParseUint(f[5], 8, 32)
	e.mode, e.blob = uint32(mode), f[6]
	for _, x := range err {
		if x != nil {
			return e, "", false
		}
	}
	if !validBlob(e.blob) {
		return e, "", false
	}
	p, ok = unquoteFast(rest)
	return e, p, ok
}

// unquoteFast is strconv.Unquote, without its cost for the common path
// that needs no escapes.
func unquoteFast(q string) (string, bool) {
	if len(q) >= 2 && q[0] == '"' && q[len(q)-1] == '"' && strings.IndexByte(q[1:len(q)-1], '\\') < 0 && strings.IndexByte(q[1:len(q)-1], '"') < 0 {
		return q[1 : len(q)-1], true
	}
	s, err := strconv.Unquote(q)
	return s, err == nil
}

// saveIndex replaces the index; failing, it removes it.
func (s *Store) saveIndex(start time.Time, entries map[string]indexEntry) {
	tmp, err := os.CreateTemp(filepath.Join(s.dir, "tmp"), "index-")
	if err != nil {
		os.Remove(s.indexPath())
		return
	}
	bw := bufio.NewWriterSize(tmp, 256<<10)
	fmt.Fprintf(bw, "%d\n", start.UnixNano())
	line := make([]byte, 0, 256)
	for p, e := range entries {
		line = strconv.AppendInt(line[:0], e.size, 10)
		line = append(line, ' ')
		line = strconv.AppendInt(line, e.mtime, 10)
		line = append(line, ' ')
		line = strconv.AppendInt(line, e.ctime, 10)
		line = append(line, ' ')
		line = strconv.AppendUint(line, e.ino, 10)
		line = append(line, ' ')
		line = strconv.AppendUint(line, e.dev, 10)
		line = append(line, ' ')
		line = strconv.AppendUint(line, uint64(e.mode), 8)
		line = append(line, ' ')
		line = append(line, e.blob...)
		line = append(line, ' ')
		line = strconv.AppendQuote(line, p)
		bw.Write(append(line, '\n'))
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
