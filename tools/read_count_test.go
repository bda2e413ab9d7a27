package tools

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/memfs"
)

// countingLines is a LineCountFS that counts its calls and answers with
// the stream count, or with ops.ErrUnsupported when unsupported is set.
type countingLines struct {
	*memfs.FS
	calls       *atomic.Int32
	unsupported bool
}

func (c countingLines) CountLines(ctx context.Context, name string) (int64, int64, error) {
	c.calls.Add(1)
	if c.unsupported {
		return 0, 0, ops.ErrUnsupported
	}
	return ops.CountLines(ctx, c.FS, name)
}

// TestReadLineCountIsACapability: whether read counts the rest
// of a big file in the target depends on the backend's LineCountFS answer,
// never on Info.Backend, the display name. A backend named "local" that
// counts is asked; one that answers ErrUnsupported is asked once and read
// streams on, with the same text and details as with no capability at all.
func TestReadLineCountIsACapability(t *testing.T) {
	info := memfs.New().Info()
	info.Backend = "local"
	content := []byte(strings.Repeat("line of text\n", 300_000)) // 3.9 MB: more than the display plus countAfter
	ctx := context.Background()
	var plainText, plainDetails string
	{
		m := memfs.NewWithInfo(info)
		addFile(t, m, "/work/big.txt", string(content))
		plainText, plainDetails, _, _ = call(t, ctx, NewRead(m, info), `{"path":"big.txt"}`)
	}
	for _, unsupported := range []bool{false, true} {
		m := memfs.NewWithInfo(info)
		addFile(t, m, "/work/big.txt", string(content))
		var calls atomic.Int32
		read := NewRead(countingLines{FS: m, calls: &calls, unsupported: unsupported}, info)
		text, details, errText, _ := call(t, ctx, read, `{"path":"big.txt"}`)
		if errText != "" {
			t.Fatalf("unsupported=%v: %s", unsupported, errText)
		}
		if calls.Load() != 1 {
			t.Errorf("unsupported=%v: CountLines called %d times, want 1 (Backend %q must not matter)", unsupported, calls.Load(), info.Backend)
		}
		if text != plainText || details != plainDetails {
			t.Errorf("unsupported=%v: text %q details %s; without the capability %q %s", unsupported, trunc(text), details, trunc(plainText), plainDetails)
		}
	}
}

// TestCountLinesInTarget: no LineCountFS means ErrUnsupported, not a
// fallback stream.
func TestCountLinesInTarget(t *testing.T) {
	m := memfs.New()
	addFile(t, m, "/work/a.txt", "a\nb\n")
	if _, _, err := ops.CountLinesInTarget(context.Background(), m, "/work/a.txt"); err != ops.ErrUnsupported {
		t.Errorf("memfs: %v, want ErrUnsupported", err)
	}
	var calls atomic.Int32
	n, size, err := ops.CountLinesInTarget(context.Background(), countingLines{FS: m, calls: &calls}, "/work/a.txt")
	if n != 2 || size != 4 || err != nil || calls.Load() != 1 {
		t.Errorf("LineCountFS: %d %d %v (%d calls)", n, size, err, calls.Load())
	}
}
