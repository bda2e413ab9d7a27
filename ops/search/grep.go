package search

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"

	"github.com/pi-sandbox/pi-sandbox/ops"
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
// no config) over any ops.FS. Files are visited in sorted walk order.
//
// Differences from ripgrep, on purpose or by approximation: the .git
// directory is never searched; unreadable files and directories are skipped
// silently (ripgrep reports them and exits 2); global git excludes
// (core.excludesFile) are not read; a walked file whose NUL byte lies beyond
// the first 64 KiB is searched up to the line holding it (ripgrep stops at
// a buffer boundary near it).
func GrepFS(ctx context.Context, fsys ops.FS, q *ops.GrepQuery, fn func(ops.GrepEvent) error) error {
	root, ok := cleanAbs(q.Path)
	if !ok {
		return fmt.Errorf("search: grep: path %q is not absolute", q.Path)
	}
	m, err := compilePattern(q.Pattern, q.IgnoreCase, q.Literal)
	if err != nil {
		return err
	}
	st, err := fsys.Stat(ctx, root)
	if err != nil {
		return err
	}
	g := &grepper{ctx: ctx, fsys: fsys, m: m, q: q, fn: fn}
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
		w.visit = func(abs, rel string, typ fs.FileMode) (bool, error) {
			if typ.IsRegular() {
				return true, g.file(abs, rel, false)
			}
			return true, nil
		}
		err = w.walk(ctx)
	}
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

type grepper struct {
	ctx     context.Context
	fsys    ops.FS
	m       matcher
	q       *ops.GrepQuery
	fn      func(ops.GrepEvent) error
	matches int
}

type ctxLine struct {
	n    int
	text []byte
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
	br := bufio.NewReaderSize(r, binaryWindow)
	if !explicit {
		head, _ := br.Peek(binaryWindow)
		if bytes.IndexByte(head, 0) >= 0 {
			return nil
		}
	}
	C := max(g.q.Context, 0)
	limit := g.q.MaxMatches
	var before []ctxLine
	lastEmitted, after := 0, 0
	emit := func(n int, text []byte, match bool) error {
		lastEmitted = n
		return g.fn(ops.GrepEvent{Path: rel, Line: n, Match: match, Text: bytes.Clone(text)})
	}
	var buf []byte
	for n := 1; ; n++ {
		line, rerr := readLine(br, &buf)
		if len(line) == 0 && rerr != nil {
			if rerr == io.EOF {
				break
			}
			if explicit {
				return rerr
			}
			break
		}
		if n%1024 == 0 {
			if err := g.ctx.Err(); err != nil {
				return err
			}
		}
		if !explicit && bytes.IndexByte(line, 0) >= 0 {
			break
		}
		content := line
		text := line
		if bytes.HasSuffix(content, []byte("\n")) {
			content = content[:len(content)-1]
			text = bytes.TrimSuffix(content, []byte("\r"))
		}
		isMatch := g.m.Match(content)
		limited := limit > 0 && g.matches >= limit
		switch {
		case limited && (isMatch || after == 0):
			return errStop
		case isMatch:
			for _, b := range before {
				if b.n > lastEmitted {
					if err := emit(b.n, b.text, false); err != nil {
						return err
					}
				}
			}
			before = before[:0]
			if err := emit(n, text, true); err != nil {
				return err
			}
			g.matches++
			after = C
			if limit > 0 && g.matches >= limit && C == 0 {
				return errStop
			}
		case after > 0:
			if err := emit(n, text, false); err != nil {
				return err
			}
			after--
			if limited && after == 0 {
				return errStop
			}
		case C > 0:
			if len(before) == C {
				copy(before, before[1:])
				before = before[:C-1]
			}
			before = append(before, ctxLine{n: n, text: bytes.Clone(text)})
		}
		if rerr != nil {
			break
		}
	}
	if limit > 0 && g.matches >= limit {
		return errStop
	}
	return nil
}

// readLine returns the next line including its "\n" (the last line may lack
// it). The result is valid until the next call.
func readLine(br *bufio.Reader, buf *[]byte) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		return line, err
	}
	*buf = append((*buf)[:0], line...)
	for err == bufio.ErrBufferFull {
		line, err = br.ReadSlice('\n')
		*buf = append(*buf, line...)
	}
	return *buf, err
}
