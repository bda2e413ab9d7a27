package tools

import (
	"sync"
	"time"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

// bashUpdateThrottle is pi's BASH_UPDATE_THROTTLE_MS.
const bashUpdateThrottle = 100 * time.Millisecond

// bashStream is the command's output sink (ops.Cmd.Output): it feeds the
// accumulator and emits throttled partial results. The
// runner writes from one goroutine, the throttle timer fires on another,
// hence the mutex.
type bashStream struct {
	mu        sync.Mutex
	acc       *outputAccumulator
	spill     spillHandle
	update    loop.UpdateFunc
	accepting bool
	dirty     bool
	last      time.Time // of the last emitted update; zero: none yet
	timer     *time.Timer
	timerGen  int // invalidates a timer that fired while being stopped
}

func newBashStream(update loop.UpdateFunc, openSpill func() spillHandle) *bashStream {
	s := &bashStream{update: update, accepting: true}
	s.acc = newOutputAccumulator(defaultMaxLines, defaultMaxBytes, func() spillSink {
		s.spill = openSpill()
		return s.spill
	})
	return s
}

// Write never fails: output that arrives after the command settled is
// ignored, as pi does since its fix for #5208.
func (s *bashStream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.accepting {
		return len(p), nil
	}
	s.acc.append(p)
	if s.update != nil {
		s.dirty = true
		s.schedule()
	}
	return len(p), nil
}

// SkipOutput takes the counts of output the runner saved in the target
// only (ops.OutputSkipper).
func (s *bashStream) SkipOutput(k ops.SkippedOutput) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.accepting {
		return
	}
	s.acc.skip(k)
}

// schedule emits now when the last update is at least the throttle
// interval old, else arms the single pending timer.
func (s *bashStream) schedule() {
	delay := bashUpdateThrottle - time.Since(s.last)
	if s.last.IsZero() || delay <= 0 {
		s.stopTimer()
		s.emit()
		return
	}
	if s.timer == nil {
		gen := s.timerGen
		s.timer = time.AfterFunc(delay, func() { s.fire(gen) })
	}
}

func (s *bashStream) fire(gen int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if gen != s.timerGen || !s.accepting {
		return
	}
	s.timer = nil
	s.timerGen++
	s.emit()
}

func (s *bashStream) stopTimer() {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.timerGen++
}

// emit sends the current snapshot if output arrived since the last update.
func (s *bashStream) emit() {
	if s.update == nil || !s.dirty {
		return
	}
	s.dirty = false
	s.last = time.Now()
	snap := s.acc.snapshot()
	details := &bashDetails{FullOutputPath: s.acc.spillPath()}
	if snap.Truncated {
		details.Truncation = &snap
	}
	s.update(&loop.Result{Content: []loop.Content{loop.Text(snap.Content)}, Details: details})
}

// finish stops accepting output, flushes the decoder, emits the last update
// if one is due, and closes the spill file, so its path names a complete
// file when the tool returns.
func (s *bashStream) finish() (truncation, spillResult) {
	s.mu.Lock()
	s.accepting = false
	s.acc.finish()
	s.stopTimer()
	s.emit()
	snap := s.acc.snapshot()
	spill := s.spill
	s.mu.Unlock()

	if spill == nil {
		return snap, spillResult{}
	}
	err := spill.close()
	if !spill.opened() {
		return snap, spillResult{path: "", err: err}
	}
	// A write error after the file was created leaves a partial file; it
	// is still the best full output there is, and the notice says so.
	return snap, spillResult{path: spill.path(), incomplete: err}
}

func (s *bashStream) lastLineBytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acc.lastLineBytes
}

func (s *bashStream) structuredOutput() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acc.structured.text()
}
