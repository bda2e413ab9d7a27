package tools

import (
	"bytes"
	"context"
	"io"
	"strconv"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// maxEditBytes is the largest file edit changes. Edit holds the
// file several times over (bytes, decoded text, the LF form, the fuzzy
// form, the result, the diff's line tables), so an unbounded file made the
// CLI take gigabytes; pi stops at Node's string limit. Larger files are
// refused with a text that points to bash.
const maxEditBytes = 16 << 20

// tooLargeError is a file found larger than a limit while reading it.
type tooLargeError struct{ size int64 }

func (e *tooLargeError) Error() string {
	return "tools: file larger than the limit (" + strconv.FormatInt(e.size, 10) + "+ bytes)"
}

// readBounded reads name, expected to be size bytes, and fails with a
// *tooLargeError once it has more than limit bytes (a file that grew since
// its stat).
func readBounded(ctx context.Context, fsys ops.FS, name string, r io.ReadCloser, size, limit int64) ([]byte, error) {
	if r == nil {
		var err error
		if r, err = fsys.Open(ctx, name); err != nil {
			return nil, err
		}
	}
	defer r.Close()
	buf := bytes.NewBuffer(make([]byte, 0, min(max(size, 0), limit)+bytes.MinRead))
	n, err := buf.ReadFrom(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, &tooLargeError{size: n}
	}
	return buf.Bytes(), nil
}

// errEditTooLarge is edit's refusal of a file over maxEditBytes.
func errEditTooLarge(path string, size int64) error {
	return textErr("Could not edit file: "+path+". It is "+formatSize(int(size))+", larger than the "+
		formatSize(maxEditBytes)+" the edit tool handles. Use bash to change it instead (e.g. sed -i 's/old/new/' "+path+").",
		&tooLargeError{size: size})
}
