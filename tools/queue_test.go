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
	calls *atomic.Int32 // RealPath calls, when set
}

func (f realpathFS) RealPath(_ context.Context, name string) (string, error) {
	if f.calls != nil {
		f.calls.Add(1)
	}
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
	if len(q.active) != 0 {
		t.Errorf("%d calls left registered", len(q.active))
	}
}

// TestQueueAloneSkipsRealPath: a call that finds the queue empty runs
// without resolving its key; the next call, which comes while it runs,
// resolves both and waits when they are one file.
func TestQueueAloneSkipsRealPath(t *testing.T) {
	var calls atomic.Int32
	q := NewMutationQueue(realpathFS{links: map[string]string{"/w/alias": "/w/f"}, calls: &calls})
	ctx := context.Background()
	for range 3 {
		if err := q.Do(ctx, "/w/f", func() error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("%d RealPath calls for calls alone in the queue, want 0", n)
	}
	hold, held := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	go q.Do(ctx, "/w/f", func() error { close(held); <-hold; first.Store(true); return nil })
	<-held
	done := make(chan error, 1)
	go func() {
		done <- q.Do(ctx, "/w/alias", func() error {
			if !first.Load() {
				return errors.New("the alias ran while the file's earlier call held it")
			}
			return nil
		})
	}()
	waitRegistered(t, q, 5)
	close(hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("%d RealPath calls under contention, want 2 (each call's key once)", n)
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
	// Alone in the queue, the call runs before its key is resolved; when it
	// fails (as its own open of a link loop does), the RealPath failure is
	// its error, as if it had been rejected first.
	err := q.Do(ctx, "/w/loop", func() error { return ops.PathError("open", "/w/loop", ops.ELOOP) })
	if err == nil || err.Error() != "ELOOP: too many symbolic links encountered, realpath '/w/loop'" {
		t.Errorf("loop: %v", err)
	}
	// Behind another call it is rejected before it runs.
	other, otherHeld := make(chan struct{}), make(chan struct{})
	otherDone := make(chan error, 1)
	go func() { otherDone <- q.Do(ctx, "/w/other", func() error { close(otherHeld); <-other; return nil }) }()
	<-otherHeld
	err = q.Do(ctx, "/w/loop", func() error { t.Error("a rejected call ran"); return nil })
	if err == nil || err.Error() != "ELOOP: too many symbolic links encountered, realpath '/w/loop'" {
		t.Errorf("loop behind another call: %v", err)
	}
	close(other)
	if err := <-otherDone; err != nil {
		t.Fatal(err)
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
