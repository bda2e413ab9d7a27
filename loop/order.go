package loop

import (
	"context"
	"sync"
)

// StartOrdered is implemented by tools whose calls claim a place in an order
// when they start: edit and write enter the file mutation queue. pi starts
// the executes of a parallel batch synchronously in source order, so their
// queue registrations happen in source order; goroutines do not promise
// that. In a parallel batch the loop therefore starts such a call only once
// every earlier call of a StartOrdered tool has marked its start
// ([MarkStarted]) or returned. Other calls do not wait. A tool that wraps a
// StartOrdered tool exposes it with an Unwrap() Tool method.
type StartOrdered interface {
	// StartOrdered is a marker; it is never called.
	StartOrdered()
}

type startedKey struct{}

// startGate is one ordered call's start: closed when the call marked its
// start or returned.
type startGate struct {
	once sync.Once
	ch   chan struct{}
}

func newStartGate() *startGate { return &startGate{ch: make(chan struct{})} }

func (g *startGate) open() { g.once.Do(func() { close(g.ch) }) }

// MarkStarted tells the loop that the call running with ctx has taken its
// place in order (a StartOrdered tool calls it once it is registered), so
// the next ordered call of the batch may start. It does nothing for a ctx
// without a start gate and is safe to call more than once.
func MarkStarted(ctx context.Context) {
	if g, ok := ctx.Value(startedKey{}).(*startGate); ok {
		g.open()
	}
}

// isStartOrdered reports whether c's tool wants ordered starts, looking
// through wrappers: a tool that wraps another has Unwrap() Tool.
func isStartOrdered(c *Call) bool {
	t := c.Tool
	for t != nil {
		if _, ok := t.(StartOrdered); ok {
			return true
		}
		u, ok := t.(interface{ Unwrap() Tool })
		if !ok {
			return false
		}
		t = u.Unwrap()
	}
	return false
}
