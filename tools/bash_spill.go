package tools

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"path"
	"sync"
	"syscall"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/savedout"
)

const (
	// defaultSpillCap bounds a spill file; a note line ends a
	// capped file.
	defaultSpillCap = 1 << 30
	// spillQueueBytes bounds the raw bytes waiting for a slow writer; the
	// command's output path blocks only when that much is queued.
	spillQueueBytes = 4 << 20
)

// spillFile streams bash's raw output into pi-bash-<16 hex>.log in the
// target's spill directory. The file is opened and written by one goroutine
// through a bounded queue, so the command's output path never waits for the
// open and waits for writes only when the queue is full; nothing is dropped
// unless the file failed. close waits until every byte is written and the
// file is closed.
type spillFile struct {
	name  string
	limit int64
	total int64 // the sandbox's saved outputs (savedout), 0: no bound

	accepted int64 // bytes passed to write (producer side)
	capped   bool

	mu     sync.Mutex
	cond   sync.Cond
	queue  [][]byte
	queued int
	closed bool
	failed bool  // no more bytes are written
	openOK bool  // the file was created
	err    error // the first open, write or close error
	done   chan struct{}
}

// startSpill picks a fresh name in dir and starts the writer. ctx's values
// are used, not its cancellation: the file must be complete even when the
// command was aborted, since the abort message points to it.
func startSpill(ctx context.Context, fsys ops.FS, dir string, limit, total int64) *spillFile {
	return startSpillAt(ctx, fsys, spillName(dir), limit, total)
}

// spillName is a fresh spill file name in dir.
func spillName(dir string) string {
	var id [8]byte
	_, _ = rand.Read(id[:])
	if dir == "" {
		dir = "/tmp"
	}
	return path.Join(dir, "pi-bash-"+hex.EncodeToString(id[:])+".log")
}

// startSpillAt starts the writer of the spill file name.
func startSpillAt(ctx context.Context, fsys ops.FS, name string, limit, total int64) *spillFile {
	s := &spillFile{
		name:  name,
		limit: limit,
		total: total,
		done:  make(chan struct{}),
	}
	s.cond.L = &s.mu
	go s.run(context.WithoutCancel(ctx), fsys)
	return s
}

func (s *spillFile) path() string { return s.name }

// write queues a copy of p; past the cap the file gets a note line and
// later bytes are dropped.
func (s *spillFile) write(p []byte) {
	if s.capped || len(p) == 0 {
		return
	}
	if room := s.limit - s.accepted; int64(len(p)) > room {
		p = p[:max(room, 0)]
		s.capped = true
	}
	s.accepted += int64(len(p))
	if len(p) > 0 {
		s.enqueue(append(getSpillBuf(len(p)), p...))
	}
	if s.capped {
		s.enqueue([]byte(capNote(s.limit)))
	}
}

func (s *spillFile) enqueue(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.queued > 0 && s.queued+len(b) > spillQueueBytes && !s.failed {
		s.cond.Wait()
	}
	if s.failed {
		return
	}
	s.queue = append(s.queue, b)
	s.queued += len(b)
	s.cond.Broadcast()
}

// close flushes the queue, closes the file and returns the first error.
func (s *spillFile) close() error {
	s.mu.Lock()
	s.closed = true
	s.cond.Broadcast()
	s.mu.Unlock()
	<-s.done
	return s.err
}

// opened reports whether the file exists (valid after close).
func (s *spillFile) opened() bool { return s.openOK }

func (s *spillFile) run(ctx context.Context, fsys ops.FS) {
	defer close(s.done)
	if fsys == nil {
		s.fail(errors.New("no file system for the spill file"))
		return
	}
	budget := savedout.Start(ctx, fsys, s.name, s.total)
	defer budget.Done()
	if !budget.Room() {
		s.fail(savedout.Error(s.total))
		return
	}
	w, err := openSpill(ctx, fsys, s.name)
	if err != nil {
		s.fail(err)
		return
	}
	s.openOK = true
	var written int64
	for {
		s.mu.Lock()
		for len(s.queue) == 0 && !s.closed {
			s.cond.Wait()
		}
		batch := s.queue
		s.queue = nil
		s.mu.Unlock()
		if len(batch) == 0 {
			break
		}
		for _, b := range batch {
			if err == nil {
				t := budget.Take(len(b))
				var n int
				n, err = w.Write(b[:t])
				written += int64(n)
				if err == nil && t < len(b) {
					err = savedout.Error(s.total)
					io.WriteString(w, savedout.Note(written, err))
				}
			}
			s.mu.Lock()
			s.queued -= len(b)
			s.cond.Broadcast()
			s.mu.Unlock()
			putSpillBuf(b)
		}
		if err != nil {
			s.fail(err)
			break
		}
	}
	if cerr := w.Close(); cerr != nil && s.err == nil {
		s.err = cerr
	}
}

func (s *spillFile) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
	s.failed = true
	s.queue = nil
	s.queued = 0
	s.cond.Broadcast()
}

// openSpill creates name exclusively with mode 0600 (output may contain
// secrets), creating a missing spill directory once. The flags are the
// syscall values os.O_CREATE and os.O_EXCL stand for; tools does not import
// os.
func openSpill(ctx context.Context, fsys ops.FS, name string) (io.WriteCloser, error) {
	const flag = syscall.O_CREAT | syscall.O_EXCL
	w, err := fsys.OpenWriter(ctx, name, flag, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		if merr := fsys.MkdirAll(ctx, path.Dir(name), 0o700); merr == nil {
			w, err = fsys.OpenWriter(ctx, name, flag, 0o600)
		}
	}
	return w, err
}

// Chunk buffers are recycled: a 1 GiB output in 64 KiB chunks would
// otherwise allocate 1 GiB of garbage.
var spillBufPool sync.Pool

const spillBufSize = 64 << 10

func getSpillBuf(n int) []byte {
	if n <= spillBufSize {
		if b, ok := spillBufPool.Get().(*[]byte); ok {
			return (*b)[:0]
		}
		return make([]byte, 0, spillBufSize)
	}
	return make([]byte, 0, n)
}

func putSpillBuf(b []byte) {
	if cap(b) == spillBufSize {
		b = b[:0]
		spillBufPool.Put(&b)
	}
}
