package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/memfs"
)

// newEditEnv returns a memfs backend (cwd /work) and an edit tool on it.
func newEditEnv(t *testing.T) (*memfs.FS, loop.Tool) {
	t.Helper()
	m := memfs.New()
	return m, NewEdit(m, m.Info(), NewMutationQueue(m))
}

func addFile(t *testing.T, m *memfs.FS, name, content string) {
	t.Helper()
	if err := m.AddFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func contents(t *testing.T, m *memfs.FS, name string) string {
	t.Helper()
	b, err := m.Contents(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// editArgs builds validated-looking arguments.
func editArgs(path string, pairs ...string) map[string]any {
	edits := []any{}
	for i := 0; i < len(pairs); i += 2 {
		edits = append(edits, map[string]any{"oldText": pairs[i], "newText": pairs[i+1]})
	}
	return map[string]any{"path": path, "edits": edits}
}

func runEdit(t *testing.T, tool loop.Tool, ctx context.Context, args map[string]any) (*loop.Result, error) {
	t.Helper()
	return tool.Execute(ctx, "call-1", args, nil)
}

func TestEditModelFacingAPI(t *testing.T) {
	_, tool := newEditEnv(t)
	if tool.Name() != "edit" || tool.Label() != "edit" || tool.Mode() != loop.Parallel {
		t.Errorf("name %q label %q mode %v", tool.Name(), tool.Label(), tool.Mode())
	}
	if want := "Edit a single file using exact text replacement. Every edits[].oldText must match a unique, non-overlapping region of the original file. If two changes affect the same block or nearby lines, merge them into one edit instead of emitting overlapping edits. Do not include large unchanged regions just to connect distant changes."; tool.Description() != want {
		t.Errorf("description %q", tool.Description())
	}
	want := `{"type":"object","properties":{"path":{"type":"string","description":"Path to the file to edit (relative or absolute)"},"edits":{"type":"array","items":{"type":"object","properties":{"oldText":{"type":"string","description":"Exact text for one targeted replacement. It must be unique in the original file and must not overlap with any other edits[].oldText in the same call."},"newText":{"type":"string","description":"Replacement text for this targeted edit."}},"required":["oldText","newText"]},"description":"One or more targeted replacements. Each edit is matched against the original file, not incrementally. Do not include overlapping or nested edits. If two changes touch the same block or nearby lines, merge them into one edit instead."}},"required":["path","edits"]}`
	if got := string(tool.Parameters()); got != want {
		t.Errorf("schema:\n%s\nwant:\n%s", got, want)
	}
	if !json.Valid(tool.Parameters()) {
		t.Error("schema is not valid JSON")
	}
	if _, ok := tool.(loop.ArgumentPreparer); !ok {
		t.Error("edit must implement loop.ArgumentPreparer")
	}
}

func TestEditPrepareArguments(t *testing.T) {
	_, tool := newEditEnv(t)
	prep := tool.(loop.ArgumentPreparer)
	decode := func(s string) any {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct{ name, in, want string }{
		{"valid unchanged", `{"path":"a","edits":[{"oldText":"x","newText":"y"}]}`, `{"path":"a","edits":[{"oldText":"x","newText":"y"}]}`},
		{"edits JSON array string", `{"path":"a","edits":"[{\"oldText\":\"x\",\"newText\":\"y\"}]"}`, `{"path":"a","edits":[{"oldText":"x","newText":"y"}]}`},
		{"edits JSON array string of anything", `{"path":"a","edits":"[1,2]"}`, `{"path":"a","edits":[1,2]}`},
		{"edits JSON object string", `{"path":"a","edits":"{\"oldText\":\"x\",\"newText\":\"y\"}"}`, `{"path":"a","edits":[{"oldText":"x","newText":"y"}]}`},
		{"edits JSON object string missing newText", `{"path":"a","edits":"{\"oldText\":\"x\"}"}`, `{"path":"a","edits":"{\"oldText\":\"x\"}"}`},
		{"edits invalid JSON string", `{"path":"a","edits":"[oops"}`, `{"path":"a","edits":"[oops"}`},
		{"edits JSON number string", `{"path":"a","edits":"5"}`, `{"path":"a","edits":"5"}`},
		{"single object", `{"path":"a","edits":{"oldText":"x","newText":"y"}}`, `{"path":"a","edits":[{"oldText":"x","newText":"y"}]}`},
		{"single object not strings", `{"path":"a","edits":{"oldText":1,"newText":"y"}}`, `{"path":"a","edits":{"oldText":1,"newText":"y"}}`},
		{"top-level only", `{"path":"a","oldText":"x","newText":"y"}`, `{"path":"a","edits":[{"oldText":"x","newText":"y"}]}`},
		{"top-level appended last", `{"path":"a","edits":[{"oldText":"p","newText":"q"}],"oldText":"x","newText":"y"}`, `{"path":"a","edits":[{"oldText":"p","newText":"q"},{"oldText":"x","newText":"y"}]}`},
		{"top-level with string edits", `{"path":"a","edits":"[{\"oldText\":\"p\",\"newText\":\"q\"}]","oldText":"x","newText":"y"}`, `{"path":"a","edits":[{"oldText":"p","newText":"q"},{"oldText":"x","newText":"y"}]}`},
		{"top-level replaces non-array edits", `{"path":"a","edits":"junk","oldText":"x","newText":"y"}`, `{"path":"a","edits":[{"oldText":"x","newText":"y"}]}`},
		{"top-level needs both strings", `{"path":"a","oldText":"x","newText":2}`, `{"path":"a","oldText":"x","newText":2}`},
		{"other fields kept", `{"path":"a","extra":true,"oldText":"x","newText":"y"}`, `{"path":"a","extra":true,"edits":[{"oldText":"x","newText":"y"}]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := prep.PrepareArguments(decode(c.in))
			if !reflect.DeepEqual(got, decode(c.want)) {
				b, _ := json.Marshal(got)
				t.Errorf("got %s\nwant %s", b, c.want)
			}
		})
	}
	for _, in := range []any{nil, "string", 3.0, []any{}} {
		if got := prep.PrepareArguments(in); !reflect.DeepEqual(got, in) {
			t.Errorf("non-object %v changed to %v", in, got)
		}
	}
	// A valid input is returned as the identical map.
	m := decode(`{"path":"a","edits":[{"oldText":"x","newText":"y"}]}`).(map[string]any)
	if got := prep.PrepareArguments(m).(map[string]any); reflect.ValueOf(got).Pointer() != reflect.ValueOf(m).Pointer() {
		t.Error("a valid input must be returned as the same object")
	}
	// The folded form is a new object; the input keeps its fields.
	m = decode(`{"path":"a","oldText":"x","newText":"y"}`).(map[string]any)
	if got := prep.PrepareArguments(m).(map[string]any); reflect.ValueOf(got).Pointer() == reflect.ValueOf(m).Pointer() || m["oldText"] != "x" {
		t.Error("top-level oldText/newText must produce a new object")
	}
}

func TestEditSuccess(t *testing.T) {
	m, tool := newEditEnv(t)
	addFile(t, m, "/work/a.txt", "Hello, world!")
	res, err := runEdit(t, tool, context.Background(), editArgs("a.txt", "world", "testing"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := loop.MarshalNoEscape(res)
	want := `{"content":[{"type":"text","text":"Successfully replaced 1 block(s) in a.txt."}],"details":{"diff":"-1 Hello, world!\n+1 Hello, testing!","patch":"--- a.txt\n+++ a.txt\n@@ -1,1 +1,1 @@\n-Hello, world!\n\\ No newline at end of file\n+Hello, testing!\n\\ No newline at end of file\n","firstChangedLine":1},"isError":false}`
	if string(b) != want {
		t.Errorf("result:\n%s\nwant:\n%s", b, want)
	}
	if got := contents(t, m, "/work/a.txt"); got != "Hello, testing!" {
		t.Errorf("file = %q", got)
	}
}

func TestEditWritesGolden(t *testing.T) {
	cases := []struct {
		name, path, file, content string
		edits                     []string
		text, want                string
	}{
		{"CRLF", "c.txt", "/work/c.txt", "first\r\nsecond\r\nthird\r\n", []string{"second\n", "REPLACED\nNEW\n"},
			"Successfully replaced 1 block(s) in c.txt.", "first\r\nREPLACED\r\nNEW\r\nthird\r\n"},
		{"mixed endings", "m.txt", "/work/m.txt", "a\r\nb\nc\r\n", []string{"b\n", "B\nB2\n"},
			"Successfully replaced 1 block(s) in m.txt.", "a\r\nB\nB2\nc\r\n"},
		{"BOM kept, not matched", "/work/bom.txt", "/work/bom.txt", "\uFEFFa\r\nb\r\n", []string{"a", "x", "b", "y"},
			"Successfully replaced 2 block(s) in /work/bom.txt.", "\uFEFFx\r\ny\r\n"},
		{"path forms: @ and ~", "@~/h.txt", "/home/user/h.txt", "one", []string{"one", "two"},
			"Successfully replaced 1 block(s) in @~/h.txt.", "two"},
		{"fuzzy keeps other lines", "f.js", "/work/f.js", "keep  \nconsole.log(\u2018hello\u2019);\nafter  \n", []string{"console.log('hello');", "console.log('world');"},
			"Successfully replaced 1 block(s) in f.js.", "keep  \nconsole.log('world');\nafter  \n"},
		{"invalid UTF-8 becomes U+FFFD", "bin.txt", "/work/bin.txt", "a\xffb\nc", []string{"c", "d"},
			"Successfully replaced 1 block(s) in bin.txt.", "a\uFFFDb\nd"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, tool := newEditEnv(t)
			addFile(t, m, c.file, c.content)
			res, err := runEdit(t, tool, context.Background(), editArgs(c.path, c.edits...))
			if err != nil {
				t.Fatal(err)
			}
			if res.Content[0].Text != c.text {
				t.Errorf("text %q, want %q", res.Content[0].Text, c.text)
			}
			if got := contents(t, m, c.file); got != c.want {
				t.Errorf("file %q, want %q", got, c.want)
			}
		})
	}
}

func TestEditErrors(t *testing.T) {
	errDisk := errors.New("disk offline")
	cases := []struct {
		name    string
		setup   func(m *memfs.FS)
		args    map[string]any
		wantErr string
	}{
		{"no edits", nil, map[string]any{"path": "a.txt", "edits": []any{}}, "Edit tool input is invalid. edits must contain at least one replacement."},
		{"edits missing", nil, map[string]any{"path": "a.txt"}, "Edit tool input is invalid. edits must contain at least one replacement."},
		{"missing file", nil, editArgs("nope.txt", "a", "b"), "Could not edit file: nope.txt. Error code: ENOENT."},
		{"read-only file", func(m *memfs.FS) { m.Chmod("/work/a.txt", 0o444) }, editArgs("a.txt", "a", "b"), "Could not edit file: a.txt. Error code: EACCES."},
		{"error without a code", func(m *memfs.FS) {
			m.SetMockErr(func(op, name string) error {
				if op == "access" {
					return errDisk
				}
				return nil
			})
		}, editArgs("a.txt", "a", "b"), "Could not edit file: a.txt. Error: disk offline."},
		{"through a file", nil, editArgs("a.txt/x", "a", "b"), "Could not edit file: a.txt/x. Error code: ENOTDIR."},
		{"directory", func(m *memfs.FS) { m.AddDir("/work/d", 0o755) }, editArgs("d", "a", "b"), "EISDIR: illegal operation on a directory, read"},
		{"write fails", func(m *memfs.FS) {
			m.SetMockErr(func(op, name string) error {
				if op == "writefile" {
					return ops.PathError("open", name, ops.ENOSPC)
				}
				return nil
			})
		}, editArgs("a.txt", "alpha", "beta"), "ENOSPC: no space left on device, open '/work/a.txt'"},
		{"not found", nil, editArgs("a.txt", "zzz", "b"), "Could not find the exact text in a.txt. The old text must match exactly including all whitespace and newlines."},
		{"second edit not found", nil, editArgs("a.txt", "alpha", "A", "zzz", "b"), "Could not find edits[1] in a.txt. The oldText must match exactly including all whitespace and newlines."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, tool := newEditEnv(t)
			addFile(t, m, "/work/a.txt", "alpha\n")
			if c.setup != nil {
				c.setup(m)
			}
			res, err := runEdit(t, tool, context.Background(), c.args)
			if err == nil || err.Error() != c.wantErr {
				t.Fatalf("res %v err %v\nwant %s", res, err, c.wantErr)
			}
			m.SetMockErr(nil)
			m.Chmod("/work/a.txt", 0o644)
			if got := contents(t, m, "/work/a.txt"); got != "alpha\n" {
				t.Errorf("file changed to %q", got)
			}
		})
	}
}

func TestEditTransportErrorKept(t *testing.T) {
	m, tool := newEditEnv(t)
	addFile(t, m, "/work/a.txt", "alpha")
	m.SetMockErr(func(op, name string) error {
		if op == "access" {
			return fmt.Errorf("docker: engine gone: %w", ops.ErrTransport)
		}
		return nil
	})
	_, err := runEdit(t, tool, context.Background(), editArgs("a.txt", "alpha", "beta"))
	if err == nil || !errors.Is(err, ops.ErrTransport) {
		t.Fatalf("err %v must wrap ops.ErrTransport", err)
	}
	if want := "Could not edit file: a.txt. Error: docker: engine gone: ops: transport failure."; err.Error() != want {
		t.Errorf("err %q, want %q", err, want)
	}
}

// afterWriteFS cancels a context once a write has landed.
type afterWriteFS struct {
	*memfs.FS
	cancel context.CancelFunc
}

func (f *afterWriteFS) WriteFile(ctx context.Context, name string, data []byte, perm fs.FileMode) error {
	err := f.FS.WriteFile(ctx, name, data, perm)
	f.cancel()
	return err
}

func TestEditAbort(t *testing.T) {
	t.Run("before", func(t *testing.T) {
		m, tool := newEditEnv(t)
		addFile(t, m, "/work/a.txt", "alpha")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := runEdit(t, tool, ctx, editArgs("a.txt", "alpha", "beta"))
		if err == nil || err.Error() != "Operation aborted" {
			t.Fatalf("err %v", err)
		}
		if got := contents(t, m, "/work/a.txt"); got != "alpha" {
			t.Errorf("file changed to %q", got)
		}
	})
	t.Run("during read", func(t *testing.T) {
		m, tool := newEditEnv(t)
		addFile(t, m, "/work/a.txt", "alpha")
		ctx, cancel := context.WithCancel(context.Background())
		m.SetMockErr(func(op, name string) error {
			if op == "open" {
				cancel()
			}
			return nil
		})
		_, err := runEdit(t, tool, ctx, editArgs("a.txt", "alpha", "beta"))
		if err == nil || err.Error() != "Operation aborted" {
			t.Fatalf("err %v", err)
		}
		if got := contents(t, m, "/work/a.txt"); got != "alpha" {
			t.Errorf("file changed to %q", got)
		}
	})
	t.Run("while queued", func(t *testing.T) {
		m := memfs.New()
		addFile(t, m, "/work/a.txt", "alpha")
		q := NewMutationQueue(m)
		tool := NewEdit(m, m.Info(), q)
		held, release := make(chan struct{}), make(chan struct{})
		go q.Do(context.Background(), "/work/a.txt", func() error {
			close(held)
			<-release
			return nil
		})
		<-held
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := runEdit(t, tool, ctx, editArgs("a.txt", "alpha", "beta"))
			done <- err
		}()
		waitRegistered(t, q, 2)
		cancel()
		if err := <-done; err == nil || err.Error() != "Operation aborted" {
			t.Fatalf("err %v", err)
		}
		close(release)
		if got := contents(t, m, "/work/a.txt"); got != "alpha" {
			t.Errorf("file changed to %q", got)
		}
	})
	t.Run("after write: written, still aborted", func(t *testing.T) {
		m := memfs.New()
		addFile(t, m, "/work/a.txt", "alpha")
		ctx, cancel := context.WithCancel(context.Background())
		fsys := &afterWriteFS{FS: m, cancel: cancel}
		tool := NewEdit(fsys, m.Info(), NewMutationQueue(fsys))
		_, err := runEdit(t, tool, ctx, editArgs("a.txt", "alpha", "beta"))
		if err == nil || err.Error() != "Operation aborted" {
			t.Fatalf("err %v", err)
		}
		if got := contents(t, m, "/work/a.txt"); got != "beta" {
			t.Errorf("file = %q, the write lands before the abort is noticed", got)
		}
	})
}

// TestEditParallelRegions: 100 concurrent edits of different lines of one
// file all land, because the queue serializes them.
func TestEditParallelRegions(t *testing.T) {
	m, tool := newEditEnv(t)
	const n = 100
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "line %03d\n", i)
	}
	addFile(t, m, "/work/big.txt", b.String())
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := "big.txt"
			if i%2 == 1 {
				path = "/work/./big.txt" // another spelling, same key
			}
			_, errs[i] = tool.Execute(context.Background(), fmt.Sprint(i), editArgs(path, fmt.Sprintf("line %03d\n", i), fmt.Sprintf("LINE %03d\n", i)), nil)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("edit %d: %v", i, err)
		}
	}
	want := strings.ReplaceAll(b.String(), "line", "LINE")
	if got := contents(t, m, "/work/big.txt"); got != want {
		t.Errorf("lost edits:\n%s", got)
	}
}

type tagKey struct{}

// recordingFS logs reads and completed writes with the caller's tag.
type recordingFS struct {
	*memfs.FS
	mu  sync.Mutex
	log []string
}

func (r *recordingFS) note(ctx context.Context, op string) {
	tag, _ := ctx.Value(tagKey{}).(string)
	r.mu.Lock()
	r.log = append(r.log, op+" "+tag)
	r.mu.Unlock()
}

func (r *recordingFS) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	r.note(ctx, "read")
	runtime.Gosched() // widen the window an unserialized writer would use
	return r.FS.Open(ctx, name)
}

func (r *recordingFS) WriteFile(ctx context.Context, name string, data []byte, perm fs.FileMode) error {
	err := r.FS.WriteFile(ctx, name, data, perm)
	r.note(ctx, "write")
	return err
}

// TestEditAndWriteNeverInterleave: write calls (through a symlinked alias,
// so the queue must key by real path) never land between an edit's read and
// its write,
// and the final file is what the serialized order implies.
func TestEditAndWriteNeverInterleave(t *testing.T) {
	m := memfs.New()
	const lines = 20
	var orig strings.Builder
	for i := range lines {
		fmt.Fprintf(&orig, "m%02d\n", i)
	}
	addFile(t, m, "/work/f.txt", orig.String())
	if err := m.AddSymlink("/work/f.txt", "/work/alias.txt"); err != nil {
		t.Fatal(err)
	}
	rec := &recordingFS{FS: m}
	q := NewMutationQueue(rec)
	tool := NewEdit(rec, m.Info(), q)
	writeTool := NewWrite(rec, m.Info(), q)
	write := func(ctx context.Context) error {
		_, err := writeTool.Execute(ctx, "", map[string]any{"path": "alias.txt", "content": orig.String()}, nil)
		return err
	}

	var wg sync.WaitGroup
	errs := make(chan error, 2*lines)
	for i := range lines {
		wg.Add(2)
		go func() {
			defer wg.Done()
			ctx := context.WithValue(context.Background(), tagKey{}, fmt.Sprintf("e%02d", i))
			_, err := tool.Execute(ctx, "", editArgs("f.txt", fmt.Sprintf("m%02d\n", i), fmt.Sprintf("M%02d\n", i)), nil)
			errs <- err
		}()
		go func() {
			defer wg.Done()
			errs <- write(context.WithValue(context.Background(), tagKey{}, fmt.Sprintf("w%02d", i)))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	// Replay the log: each edit's read is immediately followed by its own
	// write, and the final content follows from the order of writes.
	state := strings.Split(strings.TrimSuffix(orig.String(), "\n"), "\n")
	for i := 0; i < len(rec.log); i++ {
		op, tag, _ := strings.Cut(rec.log[i], " ")
		switch {
		case op == "read":
			if i+1 >= len(rec.log) || rec.log[i+1] != "write "+tag {
				t.Fatalf("edit %s was interleaved: %v", tag, rec.log[i:min(i+3, len(rec.log))])
			}
			var k int
			fmt.Sscanf(tag, "e%d", &k)
			state[k] = fmt.Sprintf("M%02d", k)
			i++
		case strings.HasPrefix(tag, "w"):
			state = strings.Split(strings.TrimSuffix(orig.String(), "\n"), "\n")
		default:
			t.Fatalf("unexpected log entry %q", rec.log[i])
		}
	}
	if want, got := strings.Join(state, "\n")+"\n", contents(t, m, "/work/f.txt"); got != want {
		t.Errorf("final content %q, replay says %q", got, want)
	}
}

// benchFile is n numbered lines.
func benchFile(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "\tvalue_%06d := compute(%d) // some code on line %d\n", i, i, i)
	}
	return b.String()
}

func benchmarkEdit(b *testing.B, lines int, pairs func(i int) []string) {
	m := memfs.New()
	content := benchFile(lines)
	tool := NewEdit(m, m.Info(), NewMutationQueue(m))
	b.SetBytes(int64(len(content)))
	for i := 0; b.Loop(); i++ {
		if err := m.AddFile("/work/big.go", []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
		if _, err := tool.Execute(context.Background(), "", editArgs("big.go", pairs(i)...), nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEditOneLine: one edit in the middle of a 100k-line (6 MB) file.
func BenchmarkEditOneLine(b *testing.B) {
	benchmarkEdit(b, 100_000, func(int) []string {
		return []string{"value_050000 := compute(50000)", "value_050000 := recompute(50000)"}
	})
}

// BenchmarkEditTenScattered: ten edits spread over a 100k-line file.
func BenchmarkEditTenScattered(b *testing.B) {
	benchmarkEdit(b, 100_000, func(int) []string {
		var p []string
		for k := range 10 {
			n := k*9_999 + 7
			p = append(p, fmt.Sprintf("compute(%d)", n), fmt.Sprintf("recompute(%d)", n))
		}
		return p
	})
}

// BenchmarkEditBigBlock: replaces 2,000 consecutive lines of a 10k-line file
// with different ones (the diff's worst case: D = 4,000).
func BenchmarkEditBigBlock(b *testing.B) {
	block := benchFile(10_000)
	lines := strings.SplitAfter(block, "\n")
	oldBlock := strings.Join(lines[4_000:6_000], "")
	newBlock := strings.ReplaceAll(oldBlock, "compute", "calc")
	benchmarkEdit(b, 10_000, func(int) []string { return []string{oldBlock, newBlock} })
}

// TestEditThroughLoop runs edit calls as a model sends them: legacy forms are
// folded by PrepareArguments before validation, and one batch's parallel
// edits of one file both land.
func TestEditThroughLoop(t *testing.T) {
	m, tool := newEditEnv(t)
	addFile(t, m, "/work/a.txt", "one\ntwo\nthree\nfour\n")
	l, err := loop.New([]loop.Tool{tool})
	if err != nil {
		t.Fatal(err)
	}
	calls := []loop.ToolCall{
		{ID: "c1", Name: "edit", Arguments: json.RawMessage(`{"path":"a.txt","oldText":"one","newText":"ONE"}`)},
		{ID: "c2", Name: "edit", Arguments: json.RawMessage(`{"path":"a.txt","edits":"[{\"oldText\":\"two\",\"newText\":\"TWO\"}]"}`)},
		{ID: "c3", Name: "edit", Arguments: json.RawMessage(`{"path":"a.txt","edits":{"oldText":"three","newText":"THREE"}}`)},
		{ID: "c4", Name: "edit", Arguments: json.RawMessage(`{"path":"a.txt","edits":[]}`)},
	}
	b := l.RunBatch(context.Background(), nil, calls, nil)
	want := []string{
		"Successfully replaced 1 block(s) in a.txt.",
		"Successfully replaced 1 block(s) in a.txt.",
		"Successfully replaced 1 block(s) in a.txt.",
		"Edit tool input is invalid. edits must contain at least one replacement.",
	}
	for i, r := range b.Results {
		if got := r.Result.Content[0].Text; got != want[i] {
			t.Errorf("call %d: %q, want %q", i+1, got, want[i])
		}
		if r.Result.IsError != (i == 3) {
			t.Errorf("call %d: isError %v", i+1, r.Result.IsError)
		}
	}
	if got := contents(t, m, "/work/a.txt"); got != "ONE\nTWO\nTHREE\nfour\n" {
		t.Errorf("file %q", got)
	}
}
