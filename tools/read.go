package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
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
	// One round trip when the file is there; pi's path fallbacks only when
	// it is missing.
	if err := t.fsys.Access(ctx, abs, ops.AccessRead); err != nil {
		alt := abs
		if ops.ErrnoOf(err) == ops.ENOENT && !errors.Is(err, ops.ErrTransport) {
			alt = resolveReadPath(ctx, t.fsys, abs)
		}
		if alt == abs {
			return nil, nodeErr(err, "access", abs)
		}
		abs = alt
		if err := t.fsys.Access(ctx, abs, ops.AccessRead); err != nil {
			return nil, nodeErr(err, "access", abs)
		}
	}
	// Only regular files are read: a FIFO or a device never ends.
	fi, err := t.fsys.Stat(ctx, abs)
	if err != nil {
		return nil, readErr(err, abs)
	}
	if kind := irregularKind(fi); kind != "" {
		return nil, errNotRegular("read", a.Path, kind)
	}
	r, err := t.fsys.Open(ctx, abs)
	if err != nil {
		return nil, readErr(err, abs)
	}
	defer r.Close()

	head := make([]byte, imageSniffLen)
	n, err := io.ReadFull(r, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return nil, readErr(err, abs)
	}
	head = head[:n]
	if mime := detectImage(head); mime != "" {
		return t.readImage(ctx, io.MultiReader(bytes.NewReader(head), r), mime, abs)
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
	lineCount := func() (int64, int64, error) { return ops.CountLinesInTarget(ctx, t.fsys, abs) }
	s, err := scanText(ctx, io.MultiReader(bytes.NewReader(head), r), w, lineCount)
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
	return res, nil
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
