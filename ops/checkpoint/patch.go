package checkpoint

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// MaxPatchFile is the largest file whose lines a patch or a stat shows; a
// larger one is shown as a binary file.
const MaxPatchFile = 8 << 20

// Format is how WriteDiff shows changes.
type Format int

const (
	Patch Format = iota // a unified patch git apply accepts
	Stat                // git's --stat
)

// WriteDiff writes the changes from checkpoint from to checkpoint to ("":
// the tree under root) to w.
func (s *Store) WriteDiff(w io.Writer, root, from, to string, f Format) (Diff, error) {
	unlock, err := s.begin()
	if err != nil {
		return Diff{}, err
	}
	defer unlock()
	d, _, _, err := s.changes(root, from, to)
	if err != nil {
		return d, err
	}
	var live *os.Root
	if d.To == nil {
		if live, err = os.OpenRoot(root); err != nil {
			return d, fmt.Errorf("checkpoint: workspace: %w", err)
		}
		defer live.Close()
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	pw := &patchWriter{s: s, live: live, w: bw}
	if f == Stat {
		err = pw.stat(d.Changes)
	} else {
		err = pw.patch(d.Changes)
	}
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return d, err
}

type patchWriter struct {
	s    *Store
	live *os.Root // the new side's files, nil when it is a checkpoint
	w    *bufio.Writer
}

// readBoth reads a change's old and new sides.
func (p *patchWriter) readBoth(old, new *Entry) (content, content, error) {
	oc, err := p.read(old, false)
	if err != nil {
		return content{}, content{}, err
	}
	nc, err := p.read(new, true)
	return oc, nc, err
}

// content is a side's bytes; nil with binary true when too large.
type content struct {
	data   []byte
	binary bool
}

func (p *patchWriter) read(e *Entry, newSide bool) (content, error) {
	if e == nil {
		return content{}, nil
	}
	if e.Type == Symlink {
		return content{data: []byte(e.Link)}, nil
	}
	if e.Size > MaxPatchFile {
		return content{binary: true}, nil
	}
	var r io.ReadCloser
	var err error
	if newSide && p.live != nil {
		r, err = p.live.OpenFile(e.Path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	} else {
		r, err = os.Open(p.s.blobPath(e.Blob))
	}
	if err != nil {
		return content{}, fmt.Errorf("checkpoint: diff %s: %w", e.Path, errors.Unwrap(err))
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, MaxPatchFile+1))
	if err != nil {
		return content{}, fmt.Errorf("checkpoint: diff %s: %w", e.Path, err)
	}
	if len(data) > MaxPatchFile {
		return content{binary: true}, nil
	}
	head := data
	if len(head) > 8000 {
		head = head[:8000]
	}
	return content{data: data, binary: bytes.IndexByte(head, 0) >= 0}, nil
}

func gitMode(e *Entry) string {
	switch {
	case e.Type == Symlink:
		return "120000"
	case e.Mode&0o100 != 0:
		return "100755"
	}
	return "100644"
}

// fileChanges splits a type change into a deletion and an addition and
// leaves out directories, as git does.
func fileChanges(cs []Change) []Change {
	var out []Change
	for _, c := range cs {
		switch {
		case c.Status == 'T':
			out = append(out, Change{Path: c.Path, Status: 'D', Old: c.Old}, Change{Path: c.Path, Status: 'A', New: c.New})
		case c.Old != nil && c.Old.Type == Dir, c.New != nil && c.New.Type == Dir:
		default:
			out = append(out, c)
		}
	}
	return out
}

func splitLines(b []byte) []string {
	var out []string
	s := string(b)
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

func (p *patchWriter) patch(cs []Change) error {
	for _, c := range fileChanges(cs) {
		if c.Status == 'M' && c.Old.Blob == c.New.Blob && c.Old.Link == c.New.Link && gitMode(c.Old) == gitMode(c.New) {
			continue // a mode change git does not record
		}
		a, b := "a/"+c.Path, "b/"+c.Path
		fmt.Fprintf(p.w, "diff --git %s %s\n", gitQuote(a), gitQuote(b))
		switch c.Status {
		case 'A':
			fmt.Fprintf(p.w, "new file mode %s\n", gitMode(c.New))
			a = "/dev/null"
		case 'D':
			fmt.Fprintf(p.w, "deleted file mode %s\n", gitMode(c.Old))
			b = "/dev/null"
		default:
			if gitMode(c.Old) != gitMode(c.New) {
				fmt.Fprintf(p.w, "old mode %s\nnew mode %s\n", gitMode(c.Old), gitMode(c.New))
			}
			if c.Old.Blob == c.New.Blob && c.Old.Link == c.New.Link {
				continue
			}
		}
		oc, nc, err := p.readBoth(c.Old, c.New)
		if err != nil {
			return err
		}
		if oc.binary || nc.binary {
			fmt.Fprintf(p.w, "Binary files %s and %s differ\n", gitQuote(a), gitQuote(b))
			continue
		}
		if len(oc.data) == 0 && len(nc.data) == 0 {
			continue
		}
		fmt.Fprintf(p.w, "--- %s\n+++ %s\n", gitQuote(a), gitQuote(b))
		ol, nl := splitLines(oc.data), splitLines(nc.data)
		writeHunks(p.w, ol, nl, lineDiff(ol, nl))
	}
	return nil
}

const contextLines = 3

func writeHunks(w *bufio.Writer, ol, nl []string, ops []op) {
	i := 0
	for i < len(ops) {
		for i < len(ops) && ops[i].kind == ' ' {
			i++
		}
		if i == len(ops) {
			return
		}
		start := max(i-contextLines, 0)
		// Extend while the next change is within 2*context lines.
		end := i
		for {
			for end < len(ops) && ops[end].kind != ' ' {
				end++
			}
			k := end
			for k < len(ops) && ops[k].kind == ' ' && k-end < 2*contextLines {
				k++
			}
			if k < len(ops) && ops[k].kind != ' ' {
				end = k
				continue
			}
			end = min(end+contextLines, len(ops))
			break
		}
		h := ops[start:end]
		var na, nb int
		for _, o := range h {
			if o.kind != '+' {
				na++
			}
			if o.kind != '-' {
				nb++
			}
		}
		as, bs := h[0].a+1, h[0].b+1
		if na == 0 {
			as--
		}
		if nb == 0 {
			bs--
		}
		fmt.Fprintf(w, "@@ -%s +%s @@\n", hunkRange(as, na), hunkRange(bs, nb))
		for _, o := range h {
			var line string
			switch o.kind {
			case '+':
				line = nl[o.b]
			default:
				line = ol[o.a]
			}
			w.WriteByte(o.kind)
			w.WriteString(line)
			if !strings.HasSuffix(line, "\n") {
				w.WriteString("\n\\ No newline at end of file\n")
			}
		}
		i = end
	}
}

func hunkRange(start, n int) string {
	if n == 1 {
		return strconv.Itoa(start)
	}
	return strconv.Itoa(start) + "," + strconv.Itoa(n)
}

// gitQuote quotes a path as git does (core.quotePath): in double quotes
// with C escapes when it holds a control character, a quote, a backslash
// or a byte of 0x80 or more.
func gitQuote(s string) string {
	need := false
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			need = true
			break
		}
	}
	if !need {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\v':
			b.WriteString(`\v`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		default:
			if c < 0x20 || c >= 0x7f {
				fmt.Fprintf(&b, "\\%03o", c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// QuotePath quotes a path for display as git does.
func QuotePath(s string) string { return gitQuote(s) }

func (p *patchWriter) stat(cs []Change) error {
	type row struct {
		name     string
		add, del int
		bin      bool
		osz, nsz int64
	}
	var rows []row
	maxName, maxN, maxCh := 0, 0, 0
	var tadd, tdel int
	for _, c := range fileChanges(cs) {
		r := row{name: gitQuote(c.Path)}
		oc, nc, err := p.readBoth(c.Old, c.New)
		if err != nil {
			return err
		}
		if oc.binary || nc.binary {
			r.bin = true
			if c.Old != nil {
				r.osz = c.Old.Size
			}
			if c.New != nil {
				r.nsz = c.New.Size
			}
		} else {
			ol, nl := splitLines(oc.data), splitLines(nc.data)
			for _, o := range lineDiff(ol, nl) {
				switch o.kind {
				case '+':
					r.add++
				case '-':
					r.del++
				}
			}
			tadd += r.add
			tdel += r.del
		}
		rows = append(rows, r)
		maxName = max(maxName, len(r.name))
		maxN = max(maxN, len(strconv.Itoa(r.add+r.del)))
		maxCh = max(maxCh, r.add+r.del)
	}
	if len(rows) == 0 {
		return nil
	}
	const width = 50
	for _, r := range rows {
		if r.bin {
			fmt.Fprintf(p.w, " %-*s | Bin %d -> %d bytes\n", maxName, r.name, r.osz, r.nsz)
			continue
		}
		a, d := r.add, r.del
		if maxCh > width {
			a = (a*width + maxCh - 1) / maxCh
			d = (d*width + maxCh - 1) / maxCh
		}
		fmt.Fprintf(p.w, " %-*s | %*d %s%s\n", maxName, r.name, maxN, r.add+r.del, strings.Repeat("+", a), strings.Repeat("-", d))
	}
	fmt.Fprintf(p.w, " %d file%s changed", len(rows), plural(len(rows)))
	if tadd > 0 || tdel == 0 {
		fmt.Fprintf(p.w, ", %d insertion%s(+)", tadd, plural(tadd))
	}
	if tdel > 0 || tadd == 0 {
		fmt.Fprintf(p.w, ", %d deletion%s(-)", tdel, plural(tdel))
	}
	p.w.WriteString("\n")
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
