// Package looptest provides small tools for testing the loop and the
// command line without a backend: a function tool, echo, failing, gated
// (completion controlled by the test), sequential and updating tools.
package looptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/pi-sandbox/pi-sandbox/loop"
)

// Func is a tool made of a function.
type Func struct {
	ToolName string
	// Schema is the parameters' JSON Schema; empty means {"type":"object"}.
	Schema string
	Seq    bool
	Fn     func(ctx context.Context, id string, args map[string]any, update loop.UpdateFunc) (*loop.Result, error)
}

var _ loop.Tool = (*Func)(nil)

func (f *Func) Name() string        { return f.ToolName }
func (f *Func) Label() string       { return f.ToolName }
func (f *Func) Description() string { return "test tool " + f.ToolName }
func (f *Func) Parameters() json.RawMessage {
	if f.Schema == "" {
		return json.RawMessage(`{"type":"object"}`)
	}
	return json.RawMessage(f.Schema)
}
func (f *Func) Mode() loop.Mode {
	if f.Seq {
		return loop.Sequential
	}
	return loop.Parallel
}
func (f *Func) Execute(ctx context.Context, id string, args map[string]any, update loop.UpdateFunc) (*loop.Result, error) {
	return f.Fn(ctx, id, args, update)
}

const textSchema = `{"type":"object","properties":{"text":{"type":"string","description":"text to return"}},"required":["text"]}`

// Echo returns {"text"} as its result text, details {"id": callID}.
func Echo() *Func {
	return &Func{ToolName: "echo", Schema: textSchema, Fn: func(_ context.Context, id string, args map[string]any, _ loop.UpdateFunc) (*loop.Result, error) {
		return loop.TextResult(args["text"].(string), map[string]any{"id": id}), nil
	}}
}

// Seq is echo in Sequential mode: a batch calling it runs one call at a time.
func Seq() *Func {
	f := Echo()
	f.ToolName, f.Seq = "seq", true
	return f
}

// Fail fails with err, or with {"message"} when err is nil.
func Fail(err error) *Func {
	return &Func{ToolName: "fail", Schema: `{"type":"object","properties":{"message":{"type":"string"}}}`,
		Fn: func(_ context.Context, _ string, args map[string]any, _ loop.UpdateFunc) (*loop.Result, error) {
			if err != nil {
				return nil, err
			}
			msg, _ := args["message"].(string)
			return nil, errors.New(msg)
		}}
}

// Updates sends {"n"} partial results "line 1" … "line n", then returns
// "done".
func Updates() *Func {
	return &Func{ToolName: "updates", Schema: `{"type":"object","properties":{"n":{"type":"integer","minimum":0}},"required":["n"]}`,
		Fn: func(_ context.Context, _ string, args map[string]any, update loop.UpdateFunc) (*loop.Result, error) {
			n := int(args["n"].(float64))
			text := ""
			for i := 1; i <= n; i++ {
				text += fmt.Sprintf("line %d\n", i)
				if update != nil {
					update(loop.TextResult(text, nil))
				}
			}
			return loop.TextResult("done", nil), nil
		}}
}

// Gates are named one-shot signals a test opens to let gated calls finish.
type Gates struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

func (g *Gates) ch(key string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[string]chan struct{}{}
	}
	c, ok := g.m[key]
	if !ok {
		c = make(chan struct{})
		g.m[key] = c
	}
	return c
}

// Open releases every call waiting on key, now and later. Opening twice is
// harmless.
func (g *Gates) Open(key string) {
	c := g.ch(key)
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-c:
	default:
		close(c)
	}
}

// Wait blocks until key is opened or ctx is done.
func (g *Gates) Wait(ctx context.Context, key string) error {
	select {
	case <-g.ch(key):
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Gate is a tool that waits for gate {"wait"} (when given), then returns
// {"text"} (default "gate <id>"). Cancelled, it fails with
// "Operation aborted". started, if not nil, receives the call id once the
// call is waiting.
func Gate(g *Gates, started chan<- string) *Func {
	return &Func{ToolName: "gate", Schema: `{"type":"object","properties":{"wait":{"type":"string"},"text":{"type":"string"}}}`,
		Fn: func(ctx context.Context, id string, args map[string]any, _ loop.UpdateFunc) (*loop.Result, error) {
			if started != nil {
				started <- id
			}
			if key, ok := args["wait"].(string); ok && key != "" {
				if err := g.Wait(ctx, key); err != nil {
					return nil, errors.New("Operation aborted")
				}
			}
			text, ok := args["text"].(string)
			if !ok {
				text = "gate " + id
			}
			return loop.TextResult(text, nil), nil
		}}
}
