package tools

import (
	"context"
	"errors"
	"path"
	"sync"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

// MutationQueue is pi's file mutation queue (pi-contracts §6): edit and
// write calls on the same file run one at a time, in the order Do was
// called; calls on different files run in parallel. In a parallel batch
// the loop calls edit and write in source order (they are
// loop.StartOrdered), so Do is called in the order the model gave them.
//
// The key is the target's real path (so a symlink and its target share a
// queue). When RealPath fails with ENOENT or ENOTDIR the lexical path is the
// key, as in pi; any other failure rejects the call.
type MutationQueue struct {
	fsys ops.FS

	mu      sync.Mutex
	reg     chan struct{}            // closed when the latest registration is done
	tails   map[string]chan struct{} // per key: closed when the last holder finishes
	tickets int64                    // registrations started (for tests)
}

// NewMutationQueue returns an empty queue keyed through fsys.RealPath.
func NewMutationQueue(fsys ops.FS) *MutationQueue {
	return &MutationQueue{fsys: fsys, tails: map[string]chan struct{}{}}
}

// Do runs fn once every earlier call for the same file has finished. absPath
// is an absolute target path. Once started, fn runs to completion and the
// queue is released only after it returns: fn itself checks ctx between its
// I/O steps (pi's abort contract). If ctx is done before fn's turn comes, Do
// returns "Operation aborted" without running fn, and the file's later
// callers still wait for the earlier ones.
func (q *MutationQueue) Do(ctx context.Context, absPath string, fn func() error) error {
	// Take a registration ticket now, so keys enter their queues in call
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

	key, kerr := q.key(ctx, absPath)
	if prev != nil {
		<-prev
	}
	var wait, done chan struct{}
	if kerr == nil {
		done = make(chan struct{})
		q.mu.Lock()
		wait = q.tails[key]
		q.tails[key] = done
		q.mu.Unlock()
	}
	close(mine)
	if kerr != nil {
		return kerr
	}

	release := func() {
		q.mu.Lock()
		if q.tails[key] == done {
			delete(q.tails, key)
		}
		q.mu.Unlock()
		close(done)
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
	return fn()
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
