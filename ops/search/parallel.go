package search

import (
	"context"
	"errors"
	"io/fs"
	"sync"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// grepWorkers is how many files are searched at once. Reading dominates
// over a remote core file system (one round trip per open and read), so
// more workers than cores pay off there; locally the cores bound it.
const grepWorkers = 8

// limiter applies GrepQuery.MaxMatches to an ordered event stream: after the
// limit-th match only that match's trailing context passes; any other
// event ends the stream.
type limiter struct {
	limit, context int
	matches        int
	lastPath       string
	lastLine       int
}

// admit reports whether ev passes and whether the stream ends after it
// (pass false, stop true: it ends before ev).
func (l *limiter) admit(ev *ops.GrepEvent) (pass, stop bool) {
	if l.reached() {
		if ev.Match || ev.Path != l.lastPath || ev.Line > l.lastLine+l.context {
			return false, true
		}
		return true, ev.Line == l.lastLine+l.context
	}
	if ev.Match {
		l.matches++
		l.lastPath, l.lastLine = ev.Path, ev.Line
		return true, l.reached() && l.context == 0
	}
	return true, false
}

func (l *limiter) reached() bool { return l.limit > 0 && l.matches >= l.limit }

// fileJob is one file of a directory search. Its worker sends the events
// in batches on events (closed after the last), then the file's error on
// done. events holds one batch: a worker ahead of the file being reported
// waits there, so a search holds a bounded number of events whatever the
// files.
type fileJob struct {
	abs, rel string
	events   chan []ops.GrepEvent
	done     chan error
}

// batchBytes is the size of the text a batch holds before it is sent.
const batchBytes = 256 << 10

// grepTree searches the files under the walker's root with grepWorkers
// workers and reports the events in walk order, as a sequential search
// would. Each file is searched on its own (at most MaxMatches matches and
// their trailing context); the limit across files is applied in order.
func grepTree(ctx context.Context, fsys ops.FS, q *ops.GrepQuery, w *walker, fn func(ops.GrepEvent) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan *fileJob, grepWorkers)
	order := make(chan *fileJob, 4*grepWorkers)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // runs before wg.Wait: unblocks the walker and workers

	var walkErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(order)
		defer close(work)
		w.visit = func(abs, rel string, typ fs.FileMode) (bool, error) {
			if !typ.IsRegular() {
				return true, nil
			}
			j := &fileJob{abs: abs, rel: rel, events: make(chan []ops.GrepEvent, 1), done: make(chan error, 1)}
			for _, ch := range []chan *fileJob{work, order} {
				select {
				case ch <- j:
				case <-ctx.Done():
					return false, ctx.Err()
				}
			}
			return true, nil
		}
		walkErr = w.walk(ctx)
	}()
	for range grepWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sr, err := compileSearch(q.Pattern, q.IgnoreCase, q.Literal)
			var buf []byte // the worker's read buffer, reused file after file
			for j := range work {
				if err == nil {
					err = ctx.Err()
				}
				if err != nil {
					close(j.events)
					j.done <- err
					continue
				}
				var (
					batch []ops.GrepEvent
					size  int
				)
				send := func() error {
					select {
					case j.events <- batch:
						batch, size = nil, 0
						return nil
					case <-ctx.Done():
						return ctx.Err()
					}
				}
				g := &grepper{ctx: ctx, fsys: fsys, searcher: sr, q: q, buf: buf}
				g.fn = func(ev ops.GrepEvent) error {
					batch = append(batch, ev)
					size += len(ev.Text) + len(ev.Path) + 64
					if size >= batchBytes {
						return send()
					}
					return nil
				}
				ferr := g.file(j.abs, j.rel, false)
				if errors.Is(ferr, errStop) {
					ferr = nil
				}
				if ferr == nil && len(batch) > 0 {
					ferr = send()
				}
				buf = g.buf
				close(j.events)
				j.done <- ferr
			}
		}()
	}

	lim := &limiter{limit: q.MaxMatches, context: max(q.Context, 0)}
	for j := range order {
		for events := range j.events {
			for i := range events {
				pass, stop := lim.admit(&events[i])
				if pass {
					if err := fn(events[i]); err != nil {
						return err
					}
				}
				if stop {
					return nil
				}
			}
		}
		if err := <-j.done; err != nil {
			return err
		}
		if lim.reached() {
			return nil // the file with the last match has ended
		}
	}
	// order is closed: the walk has returned and the workers are draining.
	wg.Wait()
	return walkErr
}
