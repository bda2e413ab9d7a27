package tools

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// readWindow selects the "\n"-separated pieces [start, end) of a file; end
// -1 means to the end of the file.
type readWindow struct{ start, end int }

// textScan is what read needs from a file, gathered in one streaming pass
// with bounded memory: the decoded beginning of the selected text (enough to
// decide pi's truncateHead exactly), the selection's totals, and the file's
// piece count.
type textScan struct {
	totalPieces int    // "\n"-separated pieces in the file (""→1)
	stored      []byte // decoded prefix of the selection, pieces joined by "\n"
	selPieces   int    // pieces selected
	selBytes    int64  // decoded size of the whole selection
	firstLen    int64  // decoded size of the first selected piece
	lastEmpty   bool   // the last selected piece is empty
}

// truncation is truncateHead of the whole selection: the stored prefix
// decides the content, the totals come from the scan.
func (s *textScan) truncation() truncation {
	tr := truncateHead(string(s.stored), defaultMaxLines, defaultMaxBytes)
	tr.TotalLines = s.selPieces
	if s.lastEmpty {
		tr.TotalLines--
	}
	tr.TotalBytes = int(s.selBytes)
	return tr
}

// countAfter is how much read keeps streaming after the displayed part is
// complete before it asks the backend to count the rest instead.
const countAfter = 1 << 20

// scanBufs recycles scanText's read buffers: a read of a small file would
// otherwise allocate, and clear, 64 KiB a call (a third of a local read's
// CPU went to that and the collector).
var scanBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// scanText streams r once. Text is decoded like Node's UTF-8 decoder.
// Storing stops once the stored selection is certain to be cut by
// truncateHead (more than maxBytes, or maxLines+2 pieces), so memory stays
// bounded whatever the file's size.
//
// When lineCount is set and the display is complete with more than
// countAfter bytes left, the scan asks it for the totals (a backend that
// counts lines in the target); if it answers ops.ErrUnsupported the scan
// streams on, else it stops and lineCount gives the totals. Then, for a selection that runs to the end
// of the file, the decoded size of the rest is taken as its raw size (exact
// for valid UTF-8) and the file is assumed to end with "\n" when the rest
// holds one (only details.truncation.totalLines depends on it).
func scanText(ctx context.Context, r io.Reader, w readWindow, lineCount func() (int64, int64, error)) (*textScan, error) {
	s := &textScan{}
	var (
		dec          utf8Decoder
		piece        int   // index of the current piece (= "\n" seen so far)
		cur          int64 // decoded size of the current piece
		storing      = true
		storedPieces int
		rawPos       int64
		doneAt       int64 = -1
	)
	inWin := func(i int) bool { return i >= w.start && (w.end < 0 || i < w.end) }
	out := func() *[]byte {
		if storing {
			return &s.stored
		}
		return nil
	}
	begin := func() {
		cur = 0
		if !inWin(piece) {
			return
		}
		s.selPieces++
		if piece > w.start {
			s.selBytes++
			if storing {
				s.stored = append(s.stored, '\n')
			}
		}
		if storing {
			storedPieces++
			if storedPieces >= defaultMaxLines+2 {
				storing = false
			}
		}
	}
	add := func(n int) {
		cur += int64(n)
		s.selBytes += int64(n)
		if storing && len(s.stored) > defaultMaxBytes {
			storing = false
		}
	}
	feed := func(p []byte) {
		if inWin(piece) {
			add(dec.feed(p, out()))
		}
	}
	end := func() {
		if !inWin(piece) {
			return
		}
		add(dec.flush(out()))
		if piece == w.start {
			s.firstLen = cur
		}
		s.lastEmpty = cur == 0
	}

	bp := scanBufs.Get().(*[]byte)
	defer scanBufs.Put(bp)
	buf := *bp
	begin()
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, rerr := r.Read(buf)
		p := buf[:n]
		rawPos += int64(n)
		for len(p) > 0 {
			// Fast paths for whole chunks that need no per-line work:
			// before the window, and after the stored part of a window
			// that runs on (valid UTF-8 decodes to itself).
			if c := bytes.Count(p, []byte{'\n'}); piece+c < w.start {
				piece += c
				break
			} else if !storing && piece > w.start && dec.pending() == 0 && (w.end < 0 || piece+c < w.end) && utf8.Valid(p) {
				s.selPieces += c
				s.selBytes += int64(len(p))
				if c > 0 {
					cur = int64(len(p) - bytes.LastIndexByte(p, '\n') - 1)
				} else {
					cur += int64(len(p))
				}
				piece += c
				break
			}
			if w.end >= 0 && piece >= w.end {
				piece += bytes.Count(p, []byte{'\n'})
				break
			}
			i := bytes.IndexByte(p, '\n')
			if i < 0 {
				feed(p)
				break
			}
			feed(p[:i])
			end()
			piece++
			begin()
			p = p[i+1:]
		}
		if rerr == io.EOF {
			end()
			s.totalPieces = piece + 1
			return s, nil
		}
		if rerr != nil {
			return nil, rerr
		}
		windowDone := w.end >= 0 && piece >= w.end
		if lineCount == nil || !(windowDone || (!storing && piece > w.start)) {
			continue
		}
		if doneAt < 0 {
			doneAt = rawPos
		}
		if rawPos-doneAt < countAfter {
			continue
		}
		newlines, size, err := lineCount()
		if errors.Is(err, ops.ErrUnsupported) {
			lineCount = nil // counting saves nothing here: stream on
			continue
		}
		if err != nil {
			return nil, err
		}
		total := max(int(newlines), piece) + 1
		if !windowDone {
			// The selection runs to the end of the file.
			restPieces := total - 1 - piece
			rest := max(size-rawPos, 0)
			s.selPieces += restPieces
			s.selBytes += rest + int64(dec.pending())
			if restPieces > 0 {
				s.lastEmpty = true
			} else if rest > 0 {
				s.lastEmpty = false
			}
		}
		s.totalPieces = total
		return s, nil
	}
}
