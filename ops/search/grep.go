package search

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

var errBadPattern = ops.ErrBadPattern

// errStop ends a walk early once a limit is reached; never returned.
var errStop = errors.New("search: stop")

// binaryWindow is how much of a walked file is checked for a NUL byte before
// it is searched: ripgrep's first buffer (64 KiB).
const binaryWindow = 64 << 10

// Grep searches through fsys's GrepFS capability when it has one that is
// supported, else with GrepFS (the engine) over the core file system.
func Grep(ctx context.Context, fsys ops.FS, q *ops.GrepQuery, fn func(ops.GrepEvent) error) error {
	if g, ok := fsys.(ops.GrepFS); ok {
		err := g.Grep(ctx, q, fn)
		if !errors.Is(err, ops.ErrUnsupported) {
			return err
		}
	}
	return GrepFS(ctx, fsys, q, fn)
}

// GrepFS is the search engine: ripgrep 13's semantics (as pi runs it: --hidden,
// no config) over any ops.FS. Files are searched concurrently and reported
// in sorted walk order, so the output is deterministic. As in ripgrep,
// .gitignore and .git/info/exclude apply only inside a git repository,
// .ignore and .rgignore everywhere (ancestors of the root included); a
// walked file with a NUL byte in its first 64 KiB is skipped as binary; a
// UTF-8 BOM is dropped and a UTF-16 file with a BOM is transcoded; a --glob
// include overrides the ignore files; a single file named by the query is
// searched whatever its content or the glob.
//
// Differences from ripgrep, on purpose or by approximation: a path named
// by the query that is neither a regular file nor a directory (a FIFO, a
// device, a socket) is refused, where ripgrep reads it (and blocks on a
// FIFO without a writer, or never ends on /dev/zero); the .git directory is
// never searched; unreadable files and directories are skipped
// silently (ripgrep reports them and exits 2); global git excludes
// (core.excludesFile) are not read; a walked file whose NUL byte lies beyond
// the first 64 KiB is searched up to the line holding it (ripgrep stops at
// a buffer boundary near it).
func GrepFS(ctx context.Context, fsys ops.FS, q *ops.GrepQuery, fn func(ops.GrepEvent) error) error {
	root, ok := cleanAbs(q.Path)
	if !ok {
		return fmt.Errorf("search: grep: path %q is not absolute", q.Path)
	}
	sr, err := compileSearch(q.Pattern, q.IgnoreCase, q.Literal)
	if err != nil {
		return err
	}
	st, err := fsys.Stat(ctx, root)
	if err != nil {
		return err
	}
	if !st.IsDir() && !st.Mode().IsRegular() {
		// A FIFO without a writer would hold the search for good, a device
		// such as /dev/zero never end it.
		return fmt.Errorf("search: grep: %s is not a regular file or a directory (%v)", root, st.Mode().Type())
	}
	g := &grepper{ctx: ctx, fsys: fsys, searcher: sr, q: q, fn: fn}
	if !st.IsDir() {
		err = g.file(root, path.Base(root), true)
	} else {
		var over *overrides
		if q.Glob != "" {
			if over, err = newOverrides(root, q.Glob); err != nil {
				return err
			}
		}
		w := &walker{fsys: fsys, root: root, customName: ".rgignore", requireGit: true, over: over}
		err = grepTree(ctx, fsys, q, w, fn)
	}
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

type grepper struct {
	ctx  context.Context
	fsys ops.FS
	*searcher
	buf     []byte // read buffer shared by the files of one search
	q       *ops.GrepQuery
	fn      func(ops.GrepEvent) error
	matches int
}

type ctxLine struct {
	n         int
	text      []byte
	truncated bool
}

// file searches one file. explicit is true for the single file a query
// names: it is searched even when binary, and errors are returned.
func (g *grepper) file(abs, rel string, explicit bool) error {
	r, err := g.fsys.Open(g.ctx, abs)
	if err != nil {
		if explicit || g.ctx.Err() != nil || ops.ErrnoOf(err) == "" {
			return err
		}
		return nil
	}
	defer r.Close()
	if g.buf == nil {
		g.buf = make([]byte, chunkSize)
	}
	cr, err := sniffBOM(r, g.buf)
	if err != nil {
		if explicit || g.ctx.Err() != nil {
			return err
		}
		return nil
	}
	s := &fileSearch{g: g, rel: rel, C: max(g.q.Context, 0)}
	defer func() { g.buf = cr.buf }() // reused by the next file, grown or not
	for first := true; ; first = false {
		chunk, cut, err := cr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if explicit || g.ctx.Err() != nil {
				return err
			}
			break
		}
		if err := g.ctx.Err(); err != nil {
			return err
		}
		stop := false
		if !explicit {
			if first && bytes.IndexByte(cr.window, 0) >= 0 {
				return nil
			}
			// A NUL further on ends the search of this file at its line.
			if z := bytes.IndexByte(chunk, 0); z >= 0 {
				chunk = chunk[:bytes.LastIndexByte(chunk[:z], '\n')+1]
				stop = true
			}
		}
		s.cutLast = cut
		if err := s.chunk(chunk); err != nil {
			return err
		}
		if stop {
			break
		}
	}
	if limit := g.q.MaxMatches; limit > 0 && g.matches >= limit {
		return errStop
	}
	return nil
}

// sniffBOM does ripgrep's default BOM sniffing on the file's first read
// (into buf, which the returned reader goes on with): a UTF-8 byte order
// mark is dropped, a UTF-16 (LE or BE) file with one is transcoded to UTF-8,
// and anything else is read as it is.
func sniffBOM(r io.Reader, buf []byte) (*chunkReader, error) {
	n, err := io.ReadAtLeast(r, buf, 3)
	eof := err == io.EOF || err == io.ErrUnexpectedEOF
	if err != nil && !eof {
		return nil, err
	}
	h := buf[:n]
	switch {
	case bytes.HasPrefix(h, []byte{0xEF, 0xBB, 0xBF}):
		n = copy(buf, h[3:])
	case bytes.HasPrefix(h, []byte{0xFF, 0xFE}), bytes.HasPrefix(h, []byte{0xFE, 0xFF}):
		rest := io.MultiReader(bytes.NewReader(bytes.Clone(h)), r)
		return &chunkReader{r: transform.NewReader(rest, unicode.BOMOverride(transform.Nop)), buf: buf}, nil
	}
	return &chunkReader{r: r, buf: buf, end: n, eof: eof}, nil
}

// chunkSize is the initial read buffer; a longer line grows it, up to
// maxLineBytes.
const chunkSize = 256 << 10

// maxLineBytes bounds the part of a line that is searched and reported: a
// longer line (a minified bundle, a sparse file's run of NUL bytes) is
// matched on its first maxLineBytes only, reported with Truncated set, and
// the rest of it is skipped, so a search holds a bounded buffer whatever
// the file. ripgrep searches the whole line.
const maxLineBytes = 4 << 20

// chunkReader returns a file as chunks of whole lines (the last one may lack
// its "\n"; it is cut when it is the first maxLineBytes of a longer line).
type chunkReader struct {
	r          io.Reader
	buf        []byte
	start, end int
	eof        bool
	filled     bool
	skip       bool   // discarding the rest of a cut line
	window     []byte // the first binaryWindow bytes, after the first next
}

func (c *chunkReader) next() (chunk []byte, cut bool, err error) {
	n := copy(c.buf, c.buf[c.start:c.end])
	c.start, c.end = 0, n
	for c.skip {
		if i := bytes.IndexByte(c.buf[:c.end], '\n'); i >= 0 {
			c.end = copy(c.buf, c.buf[i+1:c.end])
			c.skip = false
			break
		}
		if c.eof {
			c.end, c.skip = 0, false
			break
		}
		k, err := c.r.Read(c.buf)
		c.end = k
		if err == io.EOF {
			c.eof = true
		} else if err != nil {
			return nil, false, err
		}
	}
	for !c.eof && c.end < len(c.buf) {
		k, err := c.r.Read(c.buf[c.end:])
		c.end += k
		if err == io.EOF {
			c.eof = true
		} else if err != nil {
			return nil, false, err
		}
		if c.end == len(c.buf) && len(c.buf) < maxLineBytes && bytes.IndexByte(c.buf[:c.end], '\n') < 0 {
			nb := make([]byte, min(2*len(c.buf), maxLineBytes))
			copy(nb, c.buf[:c.end])
			c.buf = nb
		}
	}
	if !c.filled {
		c.filled = true
		c.window = c.buf[:min(c.end, binaryWindow)]
	}
	if c.end == 0 {
		return nil, false, io.EOF
	}
	at := c.end
	if !c.eof {
		at = bytes.LastIndexByte(c.buf[:c.end], '\n') + 1
		if at == 0 {
			// A full buffer without a "\n": the start of an over-long
			// line. Hand it out cut and skip the rest of the line.
			at, cut, c.skip = c.end, true, true
		}
	}
	c.start = at
	return c.buf[:at], cut, nil
}

// fileSearch is the per-file state: line numbers, the before-context ring,
// the trailing context still owed.
type fileSearch struct {
	g           *grepper
	rel         string
	C           int
	n           int // lines handled so far
	before      []ctxLine
	lastEmitted int
	after       int
	cutLast     bool // the current chunk's last line (without "\n") is cut
}

// chunk handles a chunk of whole lines. Without context, only matching
// lines need handling, so they are found by one pass of the candidate
// regexp over the chunk and line numbers come from counting newlines.
func (s *fileSearch) chunk(chunk []byte) error {
	scan := s.g.fast != nil || s.g.pre != nil
	if scan && s.C == 0 {
		prev := 0
		for _, start := range s.g.candidates(chunk) {
			s.n += bytes.Count(chunk[prev:start], []byte{'\n'})
			prev = start
			end := bytes.IndexByte(chunk[start:], '\n')
			line := chunk[start:]
			if end >= 0 {
				line = chunk[start : start+end+1]
			}
			s.n++
			prev = start + len(line)
			if err := s.line(s.n, line, true); err != nil {
				return err
			}
		}
		s.n += bytes.Count(chunk[prev:], []byte{'\n'})
		if prev < len(chunk) && chunk[len(chunk)-1] != '\n' {
			s.n++
		}
		return nil
	}
	var starts []int
	if scan {
		starts = s.g.candidates(chunk)
	}
	si := 0
	for off := 0; off < len(chunk); {
		end := bytes.IndexByte(chunk[off:], '\n')
		line := chunk[off:]
		if end >= 0 {
			line = chunk[off : off+end+1]
		}
		var isMatch bool
		if scan {
			for si < len(starts) && starts[si] < off {
				si++
			}
			isMatch = si < len(starts) && starts[si] == off
		} else {
			isMatch = s.g.m.Match(bytes.TrimSuffix(line, []byte{'\n'}))
		}
		s.n++
		if err := s.line(s.n, line, isMatch); err != nil {
			return err
		}
		off += len(line)
	}
	return nil
}

// line handles line n (with its "\n", if any).
func (s *fileSearch) line(n int, line []byte, isMatch bool) error {
	text := line
	truncated := false
	if bytes.HasSuffix(text, []byte{'\n'}) {
		text = bytes.TrimSuffix(text[:len(text)-1], []byte{'\r'})
	} else {
		truncated = s.cutLast
	}
	if max := s.g.q.MaxText; max > 0 && len(text) > max {
		text, truncated = text[:max], true
	}
	g := s.g
	limit := g.q.MaxMatches
	limited := limit > 0 && g.matches >= limit
	switch {
	case limited && (isMatch || s.after == 0):
		return errStop
	case isMatch:
		for _, b := range s.before {
			if b.n > s.lastEmitted {
				if err := s.emit(b.n, b.text, false, b.truncated); err != nil {
					return err
				}
			}
		}
		s.before = s.before[:0]
		if err := s.emit(n, text, true, truncated); err != nil {
			return err
		}
		g.matches++
		s.after = s.C
		if limit > 0 && g.matches >= limit && s.C == 0 {
			return errStop
		}
	case s.after > 0:
		if err := s.emit(n, text, false, truncated); err != nil {
			return err
		}
		s.after--
		if limited && s.after == 0 {
			return errStop
		}
	case s.C > 0:
		if len(s.before) == s.C {
			copy(s.before, s.before[1:])
			s.before = s.before[:s.C-1]
		}
		s.before = append(s.before, ctxLine{n: n, text: bytes.Clone(text), truncated: truncated})
	}
	return nil
}

func (s *fileSearch) emit(n int, text []byte, match, truncated bool) error {
	s.lastEmitted = n
	return s.g.fn(ops.GrepEvent{Path: s.rel, Line: n, Match: match, Text: bytes.Clone(text), Truncated: truncated})
}

// candidates returns the start offsets of the lines of chunk that match:
// the prefilter or else the multi-line candidate regexp finds the next
// possible match, the line it starts in is verified with the exact line
// matcher, and the scan goes on from the next line.
func (g *grepper) candidates(chunk []byte) []int {
	var (
		out  []int
		scan prefilterScan
	)
	if g.pre != nil {
		scan = g.pre.scan()
	}
	for pos := 0; pos < len(chunk); {
		var at int
		if g.pre != nil {
			if at = scan.find(chunk, pos); at < 0 {
				break
			}
		} else {
			loc := g.fast.FindIndex(chunk[pos:])
			if loc == nil {
				break
			}
			at = pos + loc[0]
		}
		ls := bytes.LastIndexByte(chunk[:at], '\n') + 1
		if ls >= len(chunk) {
			break // an empty match after the last "\n": no line there
		}
		le := len(chunk)
		if i := bytes.IndexByte(chunk[ls:], '\n'); i >= 0 {
			le = ls + i
		}
		if g.m.Match(chunk[ls:le]) {
			out = append(out, ls)
		}
		pos = le + 1
	}
	return out
}
