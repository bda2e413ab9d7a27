package tools

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// realpathFS answers RealPath from a map (identity otherwise); other
// methods are not used by the queue.
type realpathFS struct {
	ops.FS
	links map[string]string
	errs  map[string]error
}

func (f realpathFS) RealPath(_ context.Context, name string) (string, error) {
	if err := f.errs[name]; err != nil {
		return "", err
	}
	if r, ok := f.links[name]; ok {
		return r, nil
	}
	return name, nil
}

// waitRegistered spins until q has handed out n registration tickets.
func waitRegistered(t *testing.T, q *MutationQueue, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for q.registered() < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d registered", q.registered(), n)
		}
		runtime.Gosched()
	}
}

func TestQueueFIFOOneKey(t *testing.T) {
	q := NewMutationQueue(realpathFS{links: map[string]string{"/w/alias": "/w/f"}})
	const n = 100
	var (
		mu      sync.Mutex
		order   []int
		running atomic.Int32
		wg      sync.WaitGroup
	)
	gate := make(chan struct{})
	for i := range n {
		wg.Add(1)
		p := "/w/f"
		if i%2 == 1 {
			p = "/w/alias" // same real path: same queue
		}
		go func() {
			defer wg.Done()
			err := q.Do(context.Background(), p, func() error {
				if running.Add(1) != 1 {
					t.Error("two holders at once")
				}
				if i == 0 {
					<-gate
				}
				runtime.Gosched()
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				running.Add(-1)
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
		// Calls are made one after another: wait until this one registered.
		waitRegistered(t, q, int64(i+1))
	}
	close(gate)
	wg.Wait()
	for i, v := range order {
		if v != i {
			t.Fatalf("order = %v", order)
		}
	}
	if len(order) != n {
		t.Fatalf("ran %d of %d", len(order), n)
	}
	if len(q.tails) != 0 {
		t.Errorf("tails not cleaned: %v", q.tails)
	}
}

func TestQueueKeysParallel(t *testing.T) {
	q := NewMutationQueue(realpathFS{})
	aStarted, bStarted := make(chan struct{}), make(chan struct{})
	errc := make(chan error, 2)
	go func() {
		errc <- q.Do(context.Background(), "/w/a", func() error {
			close(aStarted)
			select {
			case <-bStarted:
				return nil
			case <-time.After(10 * time.Second):
				return errors.New("b never ran while a held its key")
			}
		})
	}()
	<-aStarted
	go func() {
		errc <- q.Do(context.Background(), "/w/b", func() error { close(bStarted); return nil })
	}()
	for range 2 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
}

func TestQueueErrorsAndAbort(t *testing.T) {
	fsys := realpathFS{errs: map[string]error{
		"/w/missing/x": ops.PathError("realpath", "/w/missing", ops.ENOENT),
		"/w/file/x":    ops.PathError("realpath", "/w/file/x", ops.ENOTDIR),
		"/w/loop":      ops.PathError("realpath", "/w/loop", ops.ELOOP),
	}}
	q := NewMutationQueue(fsys)
	ctx := context.Background()
	for _, p := range []string{"/w/missing/x", "/w/file/x"} {
		ran := false
		if err := q.Do(ctx, p, func() error { ran = true; return nil }); err != nil || !ran {
			t.Errorf("%s: err %v ran %v", p, err, ran)
		}
	}
	err := q.Do(ctx, "/w/loop", func() error { t.Error("ran"); return nil })
	if err == nil || err.Error() != "ELOOP: too many symbolic links encountered, realpath '/w/loop'" {
		t.Errorf("loop: %v", err)
	}
	// The chain still works after a failed registration; fn's error passes through.
	want := errors.New("boom")
	if err := q.Do(ctx, "/w/a", func() error { return want }); err != want {
		t.Errorf("fn error: %v", err)
	}

	// Aborted while waiting: the waiter gives up, the next caller still
	// waits for the holder.
	hold := make(chan struct{})
	started := make(chan struct{})
	go q.Do(ctx, "/w/k", func() error { close(started); <-hold; return nil })
	<-started
	actx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	before := q.registered()
	go func() { errc <- q.Do(actx, "/w/k", func() error { t.Error("aborted call ran"); return nil }) }()
	waitRegistered(t, q, before+1)
	cancel()
	if err := <-errc; err != errAborted {
		t.Errorf("aborted: %v", err)
	}
	var third atomic.Bool
	done := make(chan struct{})
	go func() {
		q.Do(ctx, "/w/k", func() error { third.Store(true); return nil })
		close(done)
	}()
	time.Sleep(20 * time.Millisecond) // negative check: must not run while held
	if third.Load() {
		t.Error("third ran while the first held the key")
	}
	close(hold)
	<-done
}
