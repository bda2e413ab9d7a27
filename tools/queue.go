package tools

import (
	"context"
	"errors"
	"path"
	"sync"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

// MutationQueue is pi's file mutation queue: edit and
// write calls on the same file run one at a time, in the order Do was
// called; calls on different files run in parallel. In a parallel batch
// the loop calls edit and write in source order (they are
// loop.StartOrdered), so Do is called in the order the model gave them.
//
// The key is the target's real path (so a symlink and its target share a
// queue). When RealPath fails with ENOENT or ENOTDIR the lexical path is the
// key, as in pi; any other failure rejects the call.
//
// A key matters only against the other calls in the queue: a call that
// finds the queue empty runs at once, without the RealPath round trip, and
// its key is resolved only if another call comes while it runs. Such a call
// that fails resolves its key then, and a RealPath failure is its error, as
// if it had been rejected before it ran (what fails RealPath fails the
// call's own first step too, so nothing was changed).
type MutationQueue struct {
	fsys ops.FS

	mu      sync.Mutex
	reg     chan struct{} // closed when the latest registration is done
	active  []*queued     // registered and not yet released, in call order
	tickets int64         // registrations started (for tests)

	// memo is what the queue's writes and edits (and the reads of the
	// tools they were built with) last saw in each file.
	memo *contentMemo
}

// queued is one registered call.
type queued struct {
	abs  string
	done chan struct{} // closed on release

	once sync.Once
	key  string // resolved by resolve
}

// resolve returns e's key, resolving it once (a call that failed to
// resolve is keyed by its lexical path: it would have been rejected).
func (e *queued) resolve(ctx context.Context, q *MutationQueue) string {
	e.once.Do(func() {
		k, err := q.key(ctx, e.abs)
		if err != nil {
			k = path.Clean(e.abs)
		}
		e.key = k
	})
	return e.key
}

// NewMutationQueue returns an empty queue keyed through fsys.RealPath.
func NewMutationQueue(fsys ops.FS) *MutationQueue {
	return &MutationQueue{fsys: fsys, memo: newContentMemo()}
}

// Do runs fn once every earlier call for the same file has finished. absPath
// is an absolute target path. Once started, fn runs to completion and the
// queue is released only after it returns: fn itself checks ctx between its
// I/O steps (pi's abort contract). If ctx is done before fn's turn comes, Do
// returns "Operation aborted" without running fn, and the file's later
// callers still wait for the earlier ones.
func (q *MutationQueue) Do(ctx context.Context, absPath string, fn func() error) error {
	// Take a registration ticket now, so keys enter the queue in call
	// order even though real paths are resolved concurrently.
	q.mu.Lock()
	prev := q.reg
	mine := make(chan struct{})
	q.reg = mine
	q.tickets++
	q.mu.Unlock()
	// The ticket fixes this call's place: the loop may start the batch's
	// next edit or write (loop.StartOrdered).
	loop.MarkStarted(ctx)

	e := &queued{abs: absPath, done: make(chan struct{})}
	if prev != nil {
		<-prev
	}
	q.mu.Lock()
	others := append([]*queued(nil), q.active...)
	if len(others) == 0 {
		q.active = append(q.active, e)
	}
	q.mu.Unlock()
	var wait chan struct{}
	alone := len(others) == 0
	if !alone {
		key, err := q.key(ctx, absPath)
		if err != nil {
			close(mine)
			return err
		}
		e.once.Do(func() { e.key = key })
		for _, o := range others {
			if o.resolve(ctx, q) == key {
				wait = o.done // the latest earlier call on the file
			}
		}
		q.mu.Lock()
		q.active = append(q.active, e)
		q.mu.Unlock()
	}
	close(mine)

	release := func() {
		q.mu.Lock()
		for i, o := range q.active {
			if o == e {
				q.active = append(q.active[:i], q.active[i+1:]...)
				break
			}
		}
		q.mu.Unlock()
		close(e.done)
	}
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
			// Keep the chain intact: pass the turn on once it comes.
			go func() {
				<-wait
				release()
			}()
			return errAborted
		}
	}
	defer release()
	err := fn()
	if err != nil && alone && ctx.Err() == nil {
		if _, kerr := q.key(ctx, absPath); kerr != nil {
			return kerr
		}
	}
	return err
}

// key returns the queue key of absPath.
func (q *MutationQueue) key(ctx context.Context, absPath string) (string, error) {
	abs := path.Clean(absPath)
	real, err := q.fsys.RealPath(ctx, abs)
	if err == nil {
		return real, nil
	}
	if ctx.Err() != nil {
		return "", errAborted
	}
	if c := ops.ErrnoOf(err); !errors.Is(err, ops.ErrTransport) && (c == ops.ENOENT || c == ops.ENOTDIR) {
		return abs, nil
	}
	return "", nodeErr(err, "realpath", abs)
}

// registered reports how many calls have taken a registration ticket.
func (q *MutationQueue) registered() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.tickets
}
