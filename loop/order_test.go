package loop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/loop"
)

// orderedTool is a StartOrdered tool: each call records its argument n when
// it starts, marks its start unless told not to, and then waits for release.
type orderedTool struct {
	name    string
	mu      *sync.Mutex
	started *[]int
	release chan struct{}
}

func (o orderedTool) Name() string              { return o.name }
func (o orderedTool) Label() string             { return o.name }
func (orderedTool) Description() string         { return "" }
func (orderedTool) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (orderedTool) Mode() loop.Mode             { return loop.Parallel }
func (orderedTool) StartOrdered()               {}
func (o orderedTool) Execute(ctx context.Context, _ string, args map[string]any, _ loop.UpdateFunc) (*loop.Result, error) {
	n := int(args["n"].(float64))
	o.mu.Lock()
	*o.started = append(*o.started, n)
	o.mu.Unlock()
	if args["skipMark"] == nil {
		loop.MarkStarted(ctx)
	}
	<-o.release
	return loop.TextResult(fmt.Sprint(n), nil), nil
}

// blockingTool is an ordinary parallel tool that waits for release.
type blockingTool struct{ release chan struct{} }

func (blockingTool) Name() string                { return "block" }
func (blockingTool) Label() string               { return "block" }
func (blockingTool) Description() string         { return "" }
func (blockingTool) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (blockingTool) Mode() loop.Mode             { return loop.Parallel }
func (b blockingTool) Execute(ctx context.Context, _ string, _ map[string]any, _ loop.UpdateFunc) (*loop.Result, error) {
	<-b.release
	return loop.TextResult("blocked", nil), nil
}

// TestStartOrderedCallsStartInSourceOrder: in a parallel batch the calls of
// StartOrdered tools start in source order (each after the previous one
// marked its start), while they still run concurrently (all have started
// before any is released) and an ordinary call that has not finished holds
// none of them up. A call that returns without marking lets the next one
// start too.
func TestStartOrderedCallsStartInSourceOrder(t *testing.T) {
	var (
		mu      sync.Mutex
		started []int
	)
	release := make(chan struct{})
	ord := orderedTool{name: "ord", mu: &mu, started: &started, release: release}
	quick := orderedTool{name: "quick", mu: &mu, started: &started, release: make(chan struct{})}
	close(quick.release)
	blockRelease := make(chan struct{})
	l, err := loop.New([]loop.Tool{ord, quick, blockingTool{blockRelease}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	calls := []loop.ToolCall{{ID: "b", Name: "block", Arguments: json.RawMessage(`{}`)}}
	for i := range n {
		name, extra := "ord", ""
		if i%10 == 5 {
			name, extra = "quick", `,"skipMark":true` // returns without marking
		}
		calls = append(calls, loop.ToolCall{ID: fmt.Sprint(i), Name: name,
			Arguments: json.RawMessage(fmt.Sprintf(`{"n":%d%s}`, i, extra))})
	}
	all := make(chan struct{})
	go func() {
		// Release the ordered calls once all of them have started, then the
		// ordinary one.
		for {
			mu.Lock()
			k := len(started)
			mu.Unlock()
			if k == n {
				break
			}
			select {
			case <-t.Context().Done():
				return
			default:
				runtime.Gosched()
			}
		}
		close(release)
		close(blockRelease)
		close(all)
	}()
	b := l.RunBatch(context.Background(), nil, calls, nil)
	<-all
	for i, got := range started {
		if got != i {
			t.Fatalf("start order %v, want 0..%d in order", started, n-1)
		}
	}
	for i, r := range b.Results {
		if r.Result.IsError {
			t.Errorf("call %s: %v", calls[i].ID, r.Result.Content)
		}
	}
}

// TestStartOrderedAbortWhileWaiting: a call waiting for its turn to start
// when the batch is aborted ends "Operation aborted" without running.
func TestStartOrderedAbortWhileWaiting(t *testing.T) {
	var (
		mu      sync.Mutex
		started []int
	)
	release := make(chan struct{})
	// The first call never marks its start and waits; the second waits for
	// it until the abort.
	ord := orderedTool{name: "ord", mu: &mu, started: &started, release: release}
	l, err := loop.New([]loop.Tool{ord})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	calls := []loop.ToolCall{
		{ID: "0", Name: "ord", Arguments: json.RawMessage(`{"n":0,"skipMark":true}`)},
		{ID: "1", Name: "ord", Arguments: json.RawMessage(`{"n":1}`)},
	}
	go func() {
		for {
			mu.Lock()
			k := len(started)
			mu.Unlock()
			if k == 1 {
				break
			}
			runtime.Gosched()
		}
		cancel()
		close(release)
	}()
	b := l.RunBatch(ctx, nil, calls, nil)
	if got := b.Results[1].Result.Content[0].Text; got != "Operation aborted" {
		t.Errorf("waiting call: %q, want Operation aborted", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(started) != 1 {
		t.Errorf("started %v: the waiting call ran", started)
	}
}

// wrapped hides a tool's methods except loop.Tool, and exposes it with
// Unwrap, as the tools' own wrappers do.
type wrapped struct{ loop.Tool }

func (w wrapped) Unwrap() loop.Tool { return w.Tool }

// TestStartOrderedThroughWrapper: the loop finds the marker through
// Unwrap, so a wrapped edit or write keeps its order.
func TestStartOrderedThroughWrapper(t *testing.T) {
	var (
		mu      sync.Mutex
		started []int
	)
	release := make(chan struct{})
	close(release)
	l, err := loop.New([]loop.Tool{wrapped{wrapped{orderedTool{name: "ord", mu: &mu, started: &started, release: release}}}})
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		started = nil
		var calls []loop.ToolCall
		for i := range 10 {
			calls = append(calls, loop.ToolCall{ID: fmt.Sprint(i), Name: "ord", Arguments: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))})
		}
		l.RunBatch(context.Background(), nil, calls, nil)
		for i, got := range started {
			if got != i {
				t.Fatalf("start order %v through a wrapper, want 0..9", started)
			}
		}
	}
}
