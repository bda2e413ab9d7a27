package tools

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/memfs"
)

// casFS is memfs with ops.ReplaceFS (compare and replace under a lock) and
// a count of the opens and replacements made.
type casFS struct {
	*memfs.FS
	mu       sync.Mutex
	opens    atomic.Int32
	replaced atomic.Int32
	refused  atomic.Int32
}

func (c *casFS) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	c.opens.Add(1)
	return c.FS.Open(ctx, name)
}

func (c *casFS) ReplaceFile(ctx context.Context, name string, old, data []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur, err := ops.ReadFile(ctx, c.FS, name)
	if err != nil {
		return err
	}
	if !bytes.Equal(cur, old) {
		c.refused.Add(1)
		return ops.ErrConflict
	}
	c.replaced.Add(1)
	return c.FS.WriteFile(ctx, name, data, 0o666)
}

// memoTools is read, write and edit sharing a queue, as All builds them.
func memoTools(t *testing.T) (*casFS, map[string]loop.Tool) {
	t.Helper()
	c := &casFS{FS: memfs.New()}
	info := c.Info()
	q := NewMutationQueue(c)
	return c, map[string]loop.Tool{
		"read":  &readTool{fsys: c, info: info, memo: q.memo},
		"write": NewWrite(c, info, q),
		"edit":  NewEdit(c, info, q),
	}
}

func mustRun(t *testing.T, tool loop.Tool, args map[string]any) string {
	t.Helper()
	res, err := tool.Execute(context.Background(), "c", args, nil)
	if err != nil {
		t.Fatalf("%s %v: %v", tool.Name(), args, err)
	}
	return res.Content[0].Text
}

// TestEditAfterReadOrWriteSkipsRead: an edit of a file that a read, a write
// or an edit of the same tool set saw last is one compare-and-replace, no
// read.
func TestEditAfterReadOrWriteSkipsRead(t *testing.T) {
	c, ts := memoTools(t)
	mustRun(t, ts["write"], map[string]any{"path": "a.txt", "content": "one\r\ntwo\r\n"})
	before := c.opens.Load()
	mustRun(t, ts["edit"], editArgs("a.txt", "one", "ONE"))
	mustRun(t, ts["edit"], editArgs("a.txt", "two", "TWO"))
	if n := c.opens.Load() - before; n != 0 {
		t.Errorf("edits after a write opened the file %d times, want 0", n)
	}
	if got := contents(t, c.FS, "/work/a.txt"); got != "ONE\r\nTWO\r\n" {
		t.Errorf("content = %q", got)
	}

	addFile(t, c.FS, "/work/b.txt", "\ufeffalpha\nbeta\n")
	mustRun(t, ts["read"], map[string]any{"path": "b.txt"})
	before = c.opens.Load()
	out := mustRun(t, ts["edit"], editArgs("b.txt", "beta", "gamma"))
	if n := c.opens.Load() - before; n != 0 {
		t.Errorf("an edit after a read opened the file %d times, want 0", n)
	}
	if !strings.Contains(out, "Successfully replaced 1 block(s) in b.txt.") {
		t.Errorf("edit said %q", out)
	}
	if got := contents(t, c.FS, "/work/b.txt"); got != "\ufeffalpha\ngamma\n" {
		t.Errorf("content = %q", got)
	}
}

// TestEditOfChangedFileRereads: the file changed since it was seen (a
// command wrote it): the replacement is refused and the edit is made on
// what the file holds now, with the errors a fresh read gives.
func TestEditOfChangedFileRereads(t *testing.T) {
	c, ts := memoTools(t)
	mustRun(t, ts["write"], map[string]any{"path": "a.txt", "content": "x = 1\n"})
	addFile(t, c.FS, "/work/a.txt", "x = 2\ny = 1\n")
	mustRun(t, ts["edit"], editArgs("a.txt", "y = 1", "y = 3"))
	if got := contents(t, c.FS, "/work/a.txt"); got != "x = 2\ny = 3\n" {
		t.Errorf("content = %q, want the edit made on the file's new content", got)
	}
	if c.refused.Load() != 0 {
		// The remembered content did not have "y = 1": nothing was sent.
		t.Errorf("%d refused replacements, want 0", c.refused.Load())
	}

	// The remembered content matches the edit, the file does not: refused,
	// then the usual edit says what a fresh read says.
	mustRun(t, ts["write"], map[string]any{"path": "b.txt", "content": "keep\n"})
	addFile(t, c.FS, "/work/b.txt", "changed\n")
	_, err := ts["edit"].Execute(context.Background(), "c", editArgs("b.txt", "keep", "kept"), nil)
	if err == nil || !strings.Contains(err.Error(), "Could not find the exact text in b.txt") {
		t.Fatalf("edit of a changed file = %v, want the not-found error of the file's content", err)
	}
	if c.refused.Load() != 1 {
		t.Errorf("%d refused replacements, want 1", c.refused.Load())
	}
	if got := contents(t, c.FS, "/work/b.txt"); got != "changed\n" {
		t.Errorf("content = %q, want it untouched", got)
	}
}

// TestContentMemoBounds: large files are not kept, and the total is
// bounded (oldest out first).
func TestContentMemoBounds(t *testing.T) {
	m := newContentMemo()
	m.put("/a", make([]byte, memoFileMax+1))
	if _, ok := m.get("/a"); ok {
		t.Error("a file over memoFileMax was kept")
	}
	for i := range memoTotal/memoFileMax + 2 {
		m.put("/f"+string(rune('a'+i)), make([]byte, memoFileMax))
	}
	if m.size > memoTotal {
		t.Errorf("kept %d bytes, over %d", m.size, memoTotal)
	}
	if _, ok := m.get("/fa"); ok {
		t.Error("the oldest entry was kept past the bound")
	}
	m.put("/fz", []byte("new"))
	m.drop("/fz")
	if _, ok := m.get("/fz"); ok {
		t.Error("drop kept the entry")
	}
}
