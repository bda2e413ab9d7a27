package tools

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strings"
	"testing"
)

// upperFilter upper-cases a command's output, holding it until Close.
type upperFilter struct {
	w      io.Writer
	held   bytes.Buffer
	closed bool
}

func (f *upperFilter) Write(p []byte) (int, error) { return f.held.Write(p) }
func (f *upperFilter) Close() error {
	f.closed = true
	_, err := f.w.Write(bytes.ToUpper(f.held.Bytes()))
	return err
}

// TestBashOptions: the policy's entries go before the tool's own, BaseEnv
// reaches the command, and a filtered call's output is what the tool shows
// and saves, from the tool (the target's spill would hold what it never
// saw); an unfiltered call on the same tool still spills in the target.
func TestBashOptions(t *testing.T) {
	fsys := newBashMemFS(bashWorkDir, bashSpillDir)
	out := bashLines(1, 3000)
	r := &spillFakeRunner{bashFakeRunner: bashFakeRunner{fn: bashEmitting(nil, out)}, fsys: fsys, create: true}
	var filters []*upperFilter
	type key struct{}
	opts := Options{
		Env:     []string{"PAGER=less", "POLICY=1"},
		BaseEnv: []string{},
		Output: func(ctx context.Context, w io.Writer) io.WriteCloser {
			if ctx.Value(key{}) == nil {
				return nil
			}
			f := &upperFilter{w: w}
			filters = append(filters, f)
			return f
		},
	}
	tool := newBash(r, fsys, bashTestInfo(), opts)
	ctx := context.WithValue(t.Context(), key{}, true)
	res, err := tool.Execute(ctx, "call", map[string]any{"command": "x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.spills) != 0 || len(filters) != 1 || !filters[0].closed {
		t.Fatalf("filtered call: %d RunSpill calls (want 0), %d filters (closed: %v)", len(r.spills), len(filters), len(filters) == 1 && filters[0].closed)
	}
	cmd := r.calls[0]
	if cmd.BaseEnv == nil || len(cmd.BaseEnv) != 0 {
		t.Errorf("BaseEnv %#v, want empty", cmd.BaseEnv)
	}
	if want := append([]string{"PAGER=less", "POLICY=1"}, bashEnv...); !slices.Equal(cmd.Env, want) {
		t.Errorf("Env %q, want %q", cmd.Env, want)
	}
	text := res.Content[0].Text
	if !strings.Contains(text, "LINE 3000") || strings.Contains(text, "line 3000") {
		t.Errorf("the tool did not show the filtered output: %q", bashTailOf(text, 200))
	}
	_, data := onlySpill(t, fsys)
	if string(data) != strings.ToUpper(out) {
		t.Errorf("the saved output is not the filtered one (%d bytes)", len(data))
	}

	// Unfiltered: the runner saves in the target.
	if _, err := tool.Execute(t.Context(), "call", map[string]any{"command": "x"}, nil); err != nil {
		t.Fatal(err)
	}
	if len(r.spills) != 1 || len(filters) != 1 {
		t.Errorf("unfiltered call: %d RunSpill calls (want 1), %d filters (want 1)", len(r.spills), len(filters))
	}
}
