package tools

import (
	"path"
	"sync"
)

// contentMemo remembers, per file, the content a read, write or edit of one
// tool set last saw there (small files only), so that the next edit of the
// file can skip reading it: the edit is computed on the remembered content
// and replaced only if the file still holds exactly that (ops.ReplaceFS
// compares under the target's lock), else it is done the usual way. A
// stale entry (a command changed the file since) costs that one refused
// round trip, never a wrong edit.
type contentMemo struct {
	mu    sync.Mutex
	files map[string][]byte
	order []string // keys, oldest first
	size  int
}

const (
	// memoFileMax is the largest file remembered.
	memoFileMax = 256 << 10
	// memoTotal bounds what is remembered in all.
	memoTotal = 4 << 20
)

func newContentMemo() *contentMemo { return &contentMemo{files: map[string][]byte{}} }

// put remembers data as abs's content: the memo keeps the slice, which
// the caller must not change after. Data too large to keep forgets abs
// instead.
func (m *contentMemo) put(abs string, data []byte) {
	if m == nil {
		return
	}
	abs = path.Clean(abs)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dropLocked(abs)
	if len(data) > memoFileMax {
		return
	}
	m.files[abs] = data
	m.order = append(m.order, abs)
	m.size += len(data)
	for m.size > memoTotal && len(m.order) > 0 {
		m.dropLocked(m.order[0])
	}
}

// get returns what abs was last seen to hold; the slice must not be
// modified.
func (m *contentMemo) get(abs string) ([]byte, bool) {
	if m == nil {
		return nil, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	data, ok := m.files[path.Clean(abs)]
	return data, ok
}

// drop forgets abs.
func (m *contentMemo) drop(abs string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dropLocked(path.Clean(abs))
}

func (m *contentMemo) dropLocked(abs string) {
	data, ok := m.files[abs]
	if !ok {
		return
	}
	delete(m.files, abs)
	m.size -= len(data)
	for i, k := range m.order {
		if k == abs {
			m.order = append(m.order[:i], m.order[i+1:]...)
			break
		}
	}
}
