package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"math"
	"strconv"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

const readDescription = "Read the contents of a file. Supports text files and images (jpg, png, gif, webp, bmp). Images are sent as attachments. For text files, output is truncated to 2000 lines or 50KB (whichever is hit first). Use offset/limit for large files. When you need the full file, continue with offset until complete."

var readSchema = objectSchema(
	stringParam("path", "Path to the file to read (relative or absolute)", true),
	numberParam("offset", "Line number to start reading from (1-indexed)", false),
	numberParam("limit", "Maximum number of lines to read", false),
)

type readTool struct {
	fsys ops.FS
	info ops.Info
	memo *contentMemo // nil: none (NewRead); All shares its queue's
}

// NewRead returns pi's read tool on fsys, resolving relative paths against
// info.WorkDir and "~" against info.Home.
func NewRead(fsys ops.FS, info ops.Info) loop.Tool { return &readTool{fsys: fsys, info: info} }

func (*readTool) Name() string                { return "read" }
func (*readTool) Label() string               { return "read" }
func (*readTool) Description() string         { return readDescription }
func (*readTool) Parameters() json.RawMessage { return readSchema }
func (*readTool) Mode() loop.Mode             { return loop.Parallel }

type readArgs struct {
	Path   string   `json:"path"`
	Offset *float64 `json:"offset"`
	Limit  *float64 `json:"limit"`
}

func (t *readTool) Execute(ctx context.Context, _ string, args map[string]any, _ loop.UpdateFunc) (*loop.Result, error) {
	if err := checkAbort(ctx); err != nil {
		return nil, err
	}
	var a readArgs
	if err := loop.DecodeArgs(args, &a); err != nil {
		return nil, err
	}
	return abortable(ctx, func() (*loop.Result, error) { return t.read(ctx, &a) })
}

func (t *readTool) read(ctx context.Context, a *readArgs) (*loop.Result, error) {
	abs := resolveToCwd(a.Path, t.info.WorkDir, t.info.Home)
	r, err := t.open(ctx, a, &abs)
	if err != nil {
		return nil, err
	}
	// The stream is ended before a count in the target (see lineCount).
	rr := &resumableReader{ctx: ctx, fsys: t.fsys, name: abs, r: r, capture: t.memo != nil}
	defer rr.Close()

	head := make([]byte, imageSniffLen)
	n, err := io.ReadFull(rr, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return nil, readErr(err, abs)
	}
	head = head[:n]
	if mime := detectImage(head); mime != "" {
		return t.readImage(ctx, io.MultiReader(bytes.NewReader(head), rr), mime, abs)
	}

	start := 0
	if a.Offset != nil && *a.Offset != 0 && !math.IsNaN(*a.Offset) {
		start = int(min(max(0, math.Trunc(*a.Offset)-1), 1<<52))
	}
	w := readWindow{start: start, end: -1}
	var limit, endLine int
	if a.Limit != nil {
		limit = int(min(max(math.Trunc(*a.Limit), math.MinInt32), math.MaxInt32))
		if limit < 0 {
			// pi slices with a negative end (counted from the file's end),
			// which needs the total first.
			newlines, _, err := ops.CountLines(ctx, t.fsys, abs)
			if err != nil {
				return nil, readErr(err, abs)
			}
			total := int(newlines) + 1
			endLine = min(start+limit, total)
			w.end = endLine
			if endLine < 0 {
				w.end = max(total+endLine, 0)
			}
			w.end = max(w.end, start)
		} else {
			w.end = start + min(limit, math.MaxInt32)
		}
	}
	// Counting in the target saves transferring the rest of the file; a
	// backend where it saves nothing says ErrUnsupported and the scan
	// streams on, which is exact (see scanText on what the count cannot
	// tell).
	// The stream is ended before the count: on docker without the helper
	// an exec stream left undrained holds back the end of the count's exec
	// (seen under load: the read waited for its deadline). Where counting
	// is not supported after all, the scan goes on from a fresh open at the
	// same offset.
	lineCount := func() (int64, int64, error) {
		rr.pause()
		return ops.CountLinesInTarget(ctx, t.fsys, abs)
	}
	s, err := scanText(ctx, io.MultiReader(bytes.NewReader(head), rr), w, lineCount)
	if err != nil {
		return nil, readErr(err, abs)
	}
	if start >= s.totalPieces {
		return nil, errors.New("Offset " + jsNumber(*a.Offset) + " is beyond end of file (" +
			strconv.Itoa(s.totalPieces) + " lines total)")
	}
	if a.Limit != nil && limit >= 0 {
		endLine = min(start+limit, s.totalPieces)
	}
	res := formatRead(s, start, a, endLine)
	res.StructuredContent = res.Content[0].Text // pi 1.6: the text itself
	if data, ok := rr.whole(); ok {
		t.memo.put(abs, data)
	}
	return res, nil
}

// open checks and opens *abs for reading: in one round trip where the
// backend can (ops.CheckedOpenFS), else step by step, and step by step
// whenever the one-step open fails, so errors and pi's path fallbacks are
// exactly those of the steps. *abs becomes the path that was opened.
func (t *readTool) open(ctx context.Context, a *readArgs, abs *string) (io.ReadCloser, error) {
	fi, r, ok := openChecked(ctx, t.fsys, *abs, ops.AccessRead)
	if ok && r != nil {
		return r, nil
	}
	if ok {
		// Only regular files are read: a FIFO or a device never ends.
		if kind := irregularKind(fi); kind != "" {
			return nil, errNotRegular("read", a.Path, kind)
		}
		// A directory: the steps below say EISDIR.
	}
	// One round trip when the file is there; pi's path fallbacks only when
	// it is missing.
	if err := t.fsys.Access(ctx, *abs, ops.AccessRead); err != nil {
		alt := *abs
		if ops.ErrnoOf(err) == ops.ENOENT && !errors.Is(err, ops.ErrTransport) {
			alt = resolveReadPath(ctx, t.fsys, *abs)
		}
		if alt == *abs {
			return nil, nodeErr(err, "access", *abs)
		}
		*abs = alt
		if err := t.fsys.Access(ctx, *abs, ops.AccessRead); err != nil {
			return nil, nodeErr(err, "access", *abs)
		}
	}
	fi, err := t.fsys.Stat(ctx, *abs)
	if err != nil {
		return nil, readErr(err, *abs)
	}
	if kind := irregularKind(fi); kind != "" {
		return nil, errNotRegular("read", a.Path, kind)
	}
	r, err = t.fsys.Open(ctx, *abs)
	if err != nil {
		return nil, readErr(err, *abs)
	}
	return r, nil
}

// openChecked is ops.CheckedOpenFS's one-step open when fsys has it; ok is
// false when it has not or the open failed (the caller then takes the
// steps, which say exactly what failed).
func openChecked(ctx context.Context, fsys ops.FS, name string, mode ops.AccessMode) (fs.FileInfo, io.ReadCloser, bool) {
	co, ok := fsys.(ops.CheckedOpenFS)
	if !ok {
		return nil, nil, false
	}
	fi, r, err := co.OpenChecked(ctx, name, mode)
	if err != nil {
		return nil, nil, false
	}
	return fi, r, true
}

// formatRead builds pi's text result from a scan; endLine is pi's
// min(start+limit, total) when a limit was given.
func formatRead(s *textScan, start int, a *readArgs, endLine int) *loop.Result {
	tr := s.truncation()
	startDisplay := start + 1
	switch {
	case tr.FirstLineExceedsLimit:
		text := "[Line " + strconv.Itoa(startDisplay) + " is " + formatSize(int(s.firstLen)) +
			", exceeds " + formatSize(defaultMaxBytes) + " limit. Use bash: sed -n '" +
			strconv.Itoa(startDisplay) + "p' " + a.Path + " | head -c " + strconv.Itoa(defaultMaxBytes) + "]"
		return loop.TextResult(text, map[string]any{"truncation": tr})
	case tr.Truncated:
		end := startDisplay + tr.OutputLines - 1
		text := tr.Content + "\n\n[Showing lines " + strconv.Itoa(startDisplay) + "-" + strconv.Itoa(end) +
			" of " + strconv.Itoa(s.totalPieces)
		if tr.TruncatedBy == byBytes {
			text += " (" + formatSize(defaultMaxBytes) + " limit)"
		}
		text += ". Use offset=" + strconv.Itoa(end+1) + " to continue.]"
		return loop.TextResult(text, map[string]any{"truncation": tr})
	case a.Limit != nil && endLine < s.totalPieces:
		return loop.TextResult(tr.Content+"\n\n["+strconv.Itoa(s.totalPieces-endLine)+
			" more lines in file. Use offset="+strconv.Itoa(endLine+1)+" to continue.]", nil)
	}
	return loop.TextResult(tr.Content, nil)
}

// readErr turns a failed open or read into Node's text: reading a directory
// prints no path ("EISDIR: illegal operation on a directory, read").
func readErr(err error, abs string) error {
	var fe *fileError
	if errors.As(err, &fe) {
		return err
	}
	if ops.ErrnoOf(err) == ops.EISDIR {
		return textErr(nodeErrorNoPath(err, "read"), err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return errAborted
	}
	return nodeErr(err, "open", abs)
}

// jsNumber formats a float as JavaScript's String(n) does for the values a
// model sends.
func jsNumber(f float64) string {
	if math.Abs(f) >= 1e21 {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// resumableReader reads name from r; after pause (which closes r), the next
// Read opens name again and skips to where it was.
type resumableReader struct {
	ctx  context.Context
	fsys ops.FS
	name string
	r    io.ReadCloser // nil while paused
	pos  int64

	// With capture set, the bytes read are kept (up to memoFileMax) for
	// whole.
	capture  bool
	seen     []byte
	over     bool // more than memoFileMax bytes came
	eof      bool
	reopened bool
}

// whole returns the file's content when the reader saw all of it in one
// stream (captured, to its end, not reopened).
func (rr *resumableReader) whole() ([]byte, bool) {
	return rr.seen, rr.capture && rr.eof && !rr.over && !rr.reopened
}

func (rr *resumableReader) Read(p []byte) (int, error) {
	n, err := rr.read(p)
	if rr.capture && !rr.over {
		if len(rr.seen)+n > memoFileMax {
			rr.over, rr.seen = true, nil
		} else {
			rr.seen = append(rr.seen, p[:n]...)
		}
	}
	if err == io.EOF {
		rr.eof = true
	}
	return n, err
}

func (rr *resumableReader) read(p []byte) (int, error) {
	if rr.r == nil {
		rr.reopened = true
		r, err := rr.fsys.Open(rr.ctx, rr.name)
		if err != nil {
			return 0, err
		}
		if _, err := io.CopyN(io.Discard, r, rr.pos); err != nil {
			r.Close()
			if err == io.EOF {
				err = io.ErrUnexpectedEOF // the file shrank under the read
			}
			return 0, err
		}
		rr.r = r
	}
	n, err := rr.r.Read(p)
	rr.pos += int64(n)
	return n, err
}

func (rr *resumableReader) pause() {
	if rr.r != nil {
		rr.r.Close()
		rr.r = nil
	}
}

func (rr *resumableReader) Close() error {
	rr.pause()
	return nil
}
