package checkpoint

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// Type is what a path is.
type Type byte

const (
	File    Type = 'f'
	Dir     Type = 'd'
	Symlink Type = 'l'
)

func (t Type) String() string {
	switch t {
	case File:
		return "file"
	case Dir:
		return "dir"
	case Symlink:
		return "symlink"
	}
	return "unknown"
}

// Entry is one path of a checkpoint, relative to the tree's root with "/"
// separators (bytes, not necessarily UTF-8).
type Entry struct {
	Path string
	Type Type
	Mode uint32 // permission, setuid, setgid and sticky bits (07777)
	Size int64  // a file's size, a link target's length
	Link string // a link's target
	Blob string // a file's SHA-256, hex
}

// Checkpoint describes one checkpoint of a store.
type Checkpoint struct {
	ID      string    `json:"id"`
	Name    string    `json:"name,omitempty"`
	Time    time.Time `json:"time"`
	Seq     int64     `json:"seq"`
	Files   int       `json:"files"` // entries of every type
	Bytes   int64     `json:"bytes"` // of the blobs this checkpoint added to the store
	Exclude []string  `json:"exclude,omitempty"`
	// Auto marks a checkpoint taken after a tool call (--auto-checkpoint),
	// Call is that call's tool-call id: diff and restore take it as a ref.
	Auto bool   `json:"auto,omitempty"`
	Call string `json:"call,omitempty"`
}

// A manifest file is the Checkpoint as one JSON line, then one line per
// entry sorted by path: TYPE MODE SIZE BLOB LINK PATH, the last two Go
// quoted (so any byte survives), BLOB "-" when there is none.

// writeManifest writes a manifest to a temporary file and renames it to
// path: a killed writer leaves no partial manifest.
func writeManifest(tmpDir, path string, c Checkpoint, entries []Entry) error {
	f, err := os.CreateTemp(tmpDir, "manifest-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // fails once renamed
	bw := bufio.NewWriterSize(f, 256<<10)
	h, _ := json.Marshal(c)
	bw.Write(h)
	bw.WriteByte('\n')
	line := make([]byte, 0, 256)
	for _, e := range entries {
		blob := e.Blob
		if blob == "" {
			blob = "-"
		}
		line = append(line[:0], byte(e.Type), ' ')
		line = strconv.AppendUint(line, uint64(e.Mode), 8)
		line = append(line, ' ')
		line = strconv.AppendInt(line, e.Size, 10)
		line = append(line, ' ')
		line = append(line, blob...)
		line = append(line, ' ')
		line = strconv.AppendQuote(line, e.Link)
		line = append(line, ' ')
		line = strconv.AppendQuote(line, e.Path)
		bw.Write(append(line, '\n'))
	}
	if err := bw.Flush(); err != nil {
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
	return os.Rename(f.Name(), path)
}

// readManifest reads a manifest; with headOnly, its first line only.
func readManifest(path string, headOnly bool) (Checkpoint, []Entry, error) {
	var c Checkpoint
	f, err := os.Open(path)
	if err != nil {
		return c, nil, err
	}
	defer f.Close()
	size := 64 << 10
	if headOnly {
		size = 4 << 10
	}
	br := bufio.NewReaderSize(f, size)
	line, err := br.ReadString('\n')
	if err != nil {
		return c, nil, fmt.Errorf("checkpoint: manifest %s: %w", path, err)
	}
	if err := json.Unmarshal([]byte(line), &c); err != nil {
		return c, nil, fmt.Errorf("checkpoint: manifest %s: %w", path, err)
	}
	if headOnly {
		return c, nil, nil
	}
	entries := make([]Entry, 0, c.Files)
	for {
		line, err := br.ReadString('\n')
		if err == io.EOF && line == "" {
			break
		}
		if err != nil {
			return c, nil, fmt.Errorf("checkpoint: manifest %s: %w", path, err)
		}
		e, perr := parseEntry(strings.TrimSuffix(line, "\n"))
		if perr != nil {
			return c, nil, fmt.Errorf("checkpoint: manifest %s: %w", path, perr)
		}
		entries = append(entries, e)
	}
	return c, entries, nil
}

func parseEntry(line string) (Entry, error) {
	var e Entry
	f := strings.SplitN(line, " ", 5)
	if len(f) != 5 || len(f[0]) != 1 {
		return e, fmt.Errorf("bad entry %q", line)
	}
	e.Type = Type(f[0][0])
	m, err := strconv.ParseUint(f[1], 8, 32)
	if err != nil {
		return e, fmt.Errorf("bad entry %q", line)
	}
	e.Mode = uint32(m) & 0o7777
	if e.Size, err = strconv.ParseInt(f[2], 10, 64); err != nil {
		return e, fmt.Errorf("bad entry %q", line)
	}
	if f[3] != "-" {
		e.Blob = f[3]
	}
	link, err := strconv.QuotedPrefix(f[4])
	if err != nil {
		return e, fmt.Errorf("bad entry %q", line)
	}
	e.Link, _ = strconv.Unquote(link)
	rest := strings.TrimPrefix(f[4][len(link):], " ")
	if e.Path, err = strconv.Unquote(rest); err != nil {
		return e, fmt.Errorf("bad entry %q", line)
	}
	if !validPath(e.Path) {
		return e, fmt.Errorf("entry path %q leaves the tree", e.Path)
	}
	switch e.Type {
	case File:
		if !validBlob(e.Blob) {
			return e, fmt.Errorf("bad blob in entry %q", line)
		}
	case Dir, Symlink:
	default:
		return e, fmt.Errorf("bad type in entry %q", line)
	}
	return e, nil
}

// validPath: relative, clean, no "." or ".." element, no NUL.
func validPath(p string) bool {
	if p == "" || p[0] == '/' || strings.IndexByte(p, 0) >= 0 {
		return false
	}
	for _, el := range strings.Split(p, "/") {
		if el == "" || el == "." || el == ".." {
			return false
		}
	}
	return true
}

func validBlob(b string) bool {
	if len(b) != 64 {
		return false
	}
	for i := 0; i < len(b); i++ {
		if !(b[i] >= '0' && b[i] <= '9' || b[i] >= 'a' && b[i] <= 'f') {
			return false
		}
	}
	return true
}
