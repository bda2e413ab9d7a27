package checkpoint

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// paxKey is the PAX record of an export's first entry (the root
// directory, "./") that marks the archive as a checkpoint and carries its
// name, time and exclude patterns. Other tar programs ignore it.
const paxKey = "PISANDBOX.checkpoint"

// archiveHead is paxKey's value.
type archiveHead struct {
	Version int       `json:"version"`
	ID      string    `json:"id"`
	Name    string    `json:"name,omitempty"`
	Time    time.Time `json:"time"`
	Exclude []string  `json:"exclude,omitempty"`
}

// exportBound is at most the size of the tar Export writes for entries:
// what a reader of it over a transport may take, and not more.
func exportBound(c Checkpoint, entries []Entry) int64 {
	n := int64(4<<10) + int64(len(c.Name)+len(c.ID)+64)
	for _, x := range c.Exclude {
		n += int64(len(x) + 8)
	}
	for _, e := range entries {
		n += 3*512 + int64(len(e.Path)+len(e.Link)+100+511)/512*512
		if e.Type == File {
			n += (e.Size + 511) / 512 * 512
		}
	}
	return n
}

// Export writes the checkpoint ref names as a tar (PAX format): the root
// directory "./" first, carrying the checkpoint's name, time and exclude
// patterns, then every entry sorted by path, directories as "path/".
// Each blob's SHA-256 is checked while it is copied. head, when not nil,
// is called once the checkpoint is found, with exportBound, before
// anything is written.
func (s *Store) Export(w io.Writer, ref string, head func(Checkpoint, int64)) (Checkpoint, error) {
	unlock, err := s.begin()
	if err != nil {
		return Checkpoint{}, err
	}
	defer unlock()
	c, err := s.resolve(ref)
	if err != nil {
		return c, err
	}
	_, entries, err := readManifest(s.manifestPath(c.ID), false)
	if err != nil {
		return c, err
	}
	if head != nil {
		head(c, exportBound(c, entries))
	}
	hj, _ := json.Marshal(archiveHead{Version: 1, ID: c.ID, Name: c.Name, Time: c.Time, Exclude: c.Exclude})
	tw := tar.NewWriter(w)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "./", Mode: 0o755, ModTime: c.Time, Format: tar.FormatPAX,
		PAXRecords: map[string]string{paxKey: string(hj)}}); err != nil {
		return c, fmt.Errorf("checkpoint: export: %w", err)
	}
	buf := make([]byte, 256<<10)
	for _, e := range entries {
		h := &tar.Header{Name: e.Path, Mode: int64(e.Mode), ModTime: c.Time, Format: tar.FormatPAX}
		switch e.Type {
		case Dir:
			h.Typeflag, h.Name = tar.TypeDir, e.Path+"/"
		case Symlink:
			h.Typeflag, h.Linkname = tar.TypeSymlink, e.Link
		default:
			h.Typeflag, h.Size = tar.TypeReg, e.Size
		}
		if err := tw.WriteHeader(h); err != nil {
			return c, fmt.Errorf("checkpoint: export %s: %w", QuotePath(e.Path), err)
		}
		if e.Type != File {
			continue
		}
		if err := s.copyBlob(tw, e, buf); err != nil {
			return c, err
		}
	}
	if err := tw.Close(); err != nil {
		return c, fmt.Errorf("checkpoint: export: %w", err)
	}
	return c, nil
}

// copyBlob writes e's blob to w, checking its size and SHA-256.
func (s *Store) copyBlob(w io.Writer, e Entry, buf []byte) error {
	f, v, err := s.openBlob(e.Blob)
	if err != nil {
		return fmt.Errorf("checkpoint: export %s: the stored content is missing: %w", QuotePath(e.Path), err)
	}
	defer f.Close()
	n, err := io.CopyBuffer(w, io.LimitReader(v, e.Size+1), buf)
	if err != nil {
		return fmt.Errorf("checkpoint: export %s: %w", QuotePath(e.Path), err)
	}
	if n != e.Size || !v.check(e.Blob) {
		return fmt.Errorf("checkpoint: export %s: the stored content is damaged (its SHA-256 or size differs from the manifest's)", QuotePath(e.Path))
	}
	return nil
}

// importError is a refusal of an archive: ops.ErrConfig, nothing kept.
func importError(format string, args ...any) error {
	return fmt.Errorf("checkpoint: import: %w: "+format, append([]any{ops.ErrConfig}, args...)...)
}

// Import reads a tar Export wrote and records it as a new checkpoint
// (named name, or as the exported one was when name is ""). An archive
// that is not an export, an entry whose path leaves the tree (absolute,
// "..") and hard links, devices and other special files are refused, and
// nothing is kept: no manifest, and no blob the import added.
func (s *Store) Import(r io.Reader, name string) (Checkpoint, error) {
	unlock, err := s.begin()
	if err != nil {
		return Checkpoint{}, err
	}
	defer unlock()
	bud, err := s.newBudget()
	if err != nil {
		return Checkpoint{}, err
	}
	defer bud.undo()
	return s.importTar(r, name, bud)
}

func (s *Store) importTar(r io.Reader, name string, bud *budget) (Checkpoint, error) {
	start := time.Now()
	tr := tar.NewReader(r)
	h, err := tr.Next()
	if err != nil {
		return Checkpoint{}, importError("not a checkpoint export of pi-sandbox (not a tar: %v)", err)
	}
	var head archiveHead
	if raw, ok := h.PAXRecords[paxKey]; !ok || json.Unmarshal([]byte(raw), &head) != nil || head.Version != 1 || h.Name != "./" {
		return Checkpoint{}, importError("not a checkpoint export of pi-sandbox (its first entry is not \"./\" with a %s record; make one with pi-sandbox checkpoint export)", paxKey)
	}
	if err := CheckExcludes(head.Exclude); err != nil {
		return Checkpoint{}, importError("the export's exclude patterns: %v", err)
	}
	byPath := map[string]int{}
	var entries []Entry
	var bytesAdded int64
	buf := make([]byte, 256<<10)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Checkpoint{}, fmt.Errorf("checkpoint: import: reading the tar: %w", err)
		}
		p := strings.TrimSuffix(h.Name, "/")
		if !validPath(p) {
			return Checkpoint{}, importError("entry %s leaves the workspace (absolute, empty, or with a \".\" or \"..\" element)", QuotePath(h.Name))
		}
		if _, dup := byPath[p]; dup {
			return Checkpoint{}, importError("entry %s appears twice", QuotePath(p))
		}
		e := Entry{Path: p, Mode: uint32(h.Mode) & 0o7777}
		switch h.Typeflag {
		case tar.TypeDir:
			e.Type = Dir
		case tar.TypeSymlink:
			e.Type, e.Link, e.Size = Symlink, h.Linkname, int64(len(h.Linkname))
			if e.Link == "" || strings.IndexByte(e.Link, 0) >= 0 {
				return Checkpoint{}, importError("link %s has an empty target", QuotePath(p))
			}
		case tar.TypeReg:
			e.Type = File
			sum, n, isNew, err := s.putBlob(tr, buf)
			if err != nil {
				return Checkpoint{}, fmt.Errorf("checkpoint: import %s: %w", QuotePath(p), err)
			}
			if isNew {
				bytesAdded += n
				if err := bud.add(sum, n); err != nil {
					return Checkpoint{}, err
				}
			}
			e.Blob, e.Size = sum, n
		case tar.TypeLink:
			return Checkpoint{}, importError("entry %s is a hard link (checkpoints hold files, directories and symbolic links)", QuotePath(p))
		default:
			return Checkpoint{}, importError("entry %s is a device, FIFO or other special file (type %q; checkpoints hold files, directories and symbolic links)", QuotePath(p), h.Typeflag)
		}
		byPath[p] = len(entries)
		entries = append(entries, e)
	}
	// A parent the archive does not list becomes a directory (0755); one
	// that is not a directory is refused.
	for i := 0; i < len(entries); i++ {
		for dir := path.Dir(entries[i].Path); dir != "."; dir = path.Dir(dir) {
			j, ok := byPath[dir]
			if !ok {
				byPath[dir] = len(entries)
				entries = append(entries, Entry{Path: dir, Type: Dir, Mode: 0o755})
				continue
			}
			if entries[j].Type != Dir {
				return Checkpoint{}, importError("entry %s is beneath %s, which is not a directory", QuotePath(entries[i].Path), QuotePath(dir))
			}
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Path < entries[j].Path })
	all, err := s.list()
	if err != nil {
		return Checkpoint{}, err
	}
	if name == "" {
		name = head.Name
	}
	c := Checkpoint{ID: newID(), Name: name, Time: start.UTC(), Files: len(entries), Bytes: bytesAdded, Exclude: head.Exclude}
	if len(all) > 0 {
		c.Seq = all[len(all)-1].Seq + 1
	}
	if err := writeManifest(filepath.Join(s.dir, "tmp"), s.manifestPath(c.ID), c, entries); err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: write manifest: %w", err)
	}
	bud.keep()
	return c, nil
}
