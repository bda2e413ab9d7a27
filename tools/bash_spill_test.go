package tools

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

// randomChunks writes data in random-sized chunks.
func randomChunks(data []byte, seed uint64, maxChunk int) func(context.Context, *ops.Cmd) error {
	return func(_ context.Context, cmd *ops.Cmd) error {
		rng := rand.New(rand.NewPCG(seed, seed))
		for rest := data; len(rest) > 0; {
			n := min(1+rng.IntN(maxChunk), len(rest))
			// A scratch buffer the runner reuses: the tool must not keep p.
			buf := append([]byte(nil), rest[:n]...)
			cmd.Output.Write(buf)
			for i := range buf {
				buf[i] = 'Z'
			}
			rest = rest[n:]
		}
		return nil
	}
}

func onlySpill(t *testing.T, fsys *bashMemFS) (string, []byte) {
	t.Helper()
	names := fsys.names()
	if len(names) != 1 || !bashSpillName.MatchString(names[0]) {
		t.Fatalf("spill files %v", names)
	}
	b, _ := fsys.file(names[0])
	return names[0], b
}

// TestBashSpillExact: the spill file holds the exact raw bytes from the
// first one, invalid UTF-8 included, whatever the chunking.
func TestBashSpillExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	data := make([]byte, 300000)
	for i := range data {
		data[i] = byte(rng.UintN(256))
		if rng.IntN(20) == 0 {
			data[i] = '\n'
		}
	}
	for _, maxChunk := range []int{1 << 10, 64 << 10, 1 << 20} {
		fsys := newBashMemFS(bashWorkDir, bashSpillDir)
		res, err, _ := runBash(t, t.Context(), &bashFakeRunner{fn: randomChunks(data, uint64(maxChunk), maxChunk)}, fsys, map[string]any{"command": "x"})
		if err != nil {
			t.Fatal(err)
		}
		path, got := onlySpill(t, fsys)
		if !bytes.Equal(got, data) {
			t.Errorf("chunks ≤ %d: spill file differs from the raw output (%d vs %d bytes)", maxChunk, len(got), len(data))
		}
		if !strings.HasSuffix(res.Content[0].Text, "Full output: "+path+"]") {
			t.Errorf("notice does not name %s: %q", path, bashTailOf(res.Content[0].Text, 200))
		}
	}
}

func TestBashSpillThresholds(t *testing.T) {
	for _, c := range []struct {
		name  string
		out   string
		spill bool
	}{
		{"at byte limit", strings.Repeat("a", 51200), false},
		{"over byte limit", strings.Repeat("a", 51201), true},
		{"at line limit", strings.Repeat("\n", 2000), false},
		{"over line limit", strings.Repeat("\n", 2000) + "x", true},
		// 17067 invalid bytes decode to 51201 bytes of U+FFFD.
		{"decoded over limit", strings.Repeat("\xff", 17067), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			fsys := newBashMemFS(bashWorkDir, bashSpillDir)
			res, err, _ := runBash(t, t.Context(), &bashFakeRunner{fn: bashEmitting(nil, c.out)}, fsys, map[string]any{"command": "x"})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(fsys.names()) == 1; got != c.spill {
				t.Fatalf("spill file %v, want %v", fsys.names(), c.spill)
			}
			if (res.Details != nil) != c.spill {
				t.Errorf("details %v", res.Details)
			}
		})
	}
}

func TestBashSpillCap(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789\n"), 30000) // 330000 bytes
	fsys := newBashMemFS(bashWorkDir, bashSpillDir)
	tool := NewBash(&bashFakeRunner{fn: randomChunks(data, 1, 9000)}, fsys, bashTestInfo())
	tool.(*bashTool).spillCap = 100000
	res, err := tool.Execute(t.Context(), "c", map[string]any{"command": "x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, got := onlySpill(t, fsys)
	want := string(data[:100000]) + "\n[pi-sandbox: output after the first 100000 bytes was not saved]\n"
	if string(got) != want {
		t.Errorf("capped file ends %q", bashTailOf(string(got), 120))
	}
	// The model still sees the real tail and totals.
	if !strings.Contains(res.Content[0].Text, "of 30000.") {
		t.Errorf("text %q", bashTailOf(res.Content[0].Text, 200))
	}
}

// TestBashSpillSlowWriter: a writer that lets one Write through at a time,
// far behind the command; every byte still arrives, in order, before the
// tool returns.
func TestBashSpillSlowWriter(t *testing.T) {
	data := make([]byte, 12<<20)
	for i := range data {
		data[i] = byte('a' + i%26)
		if i%100 == 99 {
			data[i] = '\n'
		}
	}
	fsys := newBashMemFS(bashWorkDir, bashSpillDir)
	fsys.gate = make(chan struct{})
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case fsys.gate <- struct{}{}:
			case <-stop:
				return
			}
		}
	}()
	defer close(stop)
	_, err, _ := runBash(t, t.Context(), &bashFakeRunner{fn: randomChunks(data, 3, 64<<10)}, fsys, map[string]any{"command": "x"})
	if err != nil {
		t.Fatal(err)
	}
	_, got := onlySpill(t, fsys)
	if !bytes.Equal(got, data) {
		t.Errorf("slow writer: %d of %d bytes, or out of order", len(got), len(data))
	}
}

func TestBashSpillDirCreated(t *testing.T) {
	fsys := newBashMemFS(bashWorkDir) // no spill dir yet
	_, err, _ := runBash(t, t.Context(), &bashFakeRunner{fn: bashEmitting(nil, bashLines(1, 3000))}, fsys, map[string]any{"command": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, got := onlySpill(t, fsys); string(got) != bashLines(1, 3000) {
		t.Error("spill file content")
	}
}

func TestBashSpillOpenFails(t *testing.T) {
	fsys := newBashMemFS(bashWorkDir, bashSpillDir)
	fsys.openErr = ops.PathError("open", "/spill/x", ops.ENOSPC)
	res, err, updates := runBash(t, t.Context(), &bashFakeRunner{fn: bashEmitting(nil, bashLines(1, 3000))}, fsys, map[string]any{"command": "x"})
	if err != nil {
		t.Fatal(err)
	}
	want := "\n\n[Showing lines 1001-3000 of 3000. Full output: not saved (open /spill/x: no space left on device)]"
	if !strings.HasSuffix(res.Content[0].Text, want) {
		t.Errorf("text ends %q", bashTailOf(res.Content[0].Text, 200))
	}
	if d := res.Details.(*bashDetails); d.FullOutputPath != "" || d.Truncation == nil {
		t.Errorf("details %+v", d)
	}
	if len(updates) == 0 {
		t.Error("no updates")
	}
}

func TestBashSpillWriteFails(t *testing.T) {
	fsys := newBashMemFS(bashWorkDir, bashSpillDir)
	fsys.writeErr = errors.New("disk gone")
	res, err, _ := runBash(t, t.Context(), &bashFakeRunner{fn: randomChunks(bytes.Repeat([]byte("x\n"), 1<<20), 5, 64<<10)}, fsys, map[string]any{"command": "x"})
	if err != nil {
		t.Fatal(err)
	}
	// The file exists (partial); the tool neither hangs nor fails, and
	// says the file is incomplete.
	path, _ := onlySpill(t, fsys)
	if !strings.HasSuffix(res.Content[0].Text, "Full output: "+path+" (incomplete: disk gone)]") {
		t.Errorf("text ends %q", bashTailOf(res.Content[0].Text, 200))
	}
}

// bashCtxFS refuses writes under a cancelled context, like a remote backend.
type bashCtxFS struct{ *bashMemFS }

func (f bashCtxFS) OpenWriter(ctx context.Context, name string, flag int, perm fs.FileMode) (io.WriteCloser, error) {
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return f.bashMemFS.OpenWriter(ctx, name, flag, perm)
}

// TestBashSpillCompleteAfterAbort: the abort message points to the spill
// file, so it is written and closed even though the call was cancelled.
func TestBashSpillCompleteAfterAbort(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out := bashLines(1, 5000)
	r := &bashFakeRunner{fn: func(ctx context.Context, cmd *ops.Cmd) error {
		cancel() // the spill file is created after the abort
		cmd.Output.Write([]byte(out))
		<-ctx.Done()
		return ops.Canceled(ctx)
	}}
	fsys := newBashMemFS(bashWorkDir, bashSpillDir)
	_, err, _ := runBash(t, ctx, r, bashCtxFS{fsys}, map[string]any{"command": "x"})
	if err == nil {
		t.Fatal("want an abort error")
	}
	path, got := onlySpill(t, fsys)
	want := strings.TrimSuffix(bashLines(3001, 5000), "\n") + "\n\n[Showing lines 3001-5000 of 5000. Full output: " + path + "]\n\nCommand aborted"
	if err.Error() != want {
		t.Errorf("abort text ends %q", bashTailOf(err.Error(), 200))
	}
	if string(got) != out {
		t.Errorf("spill file %d bytes, want %d", len(got), len(out))
	}
}

// TestBashUpdatesCarrySpill: once truncated, updates carry the truncation
// and the spill path.
func TestBashUpdatesCarrySpill(t *testing.T) {
	fsys := newBashMemFS(bashWorkDir, bashSpillDir)
	_, err, updates := runBash(t, t.Context(), &bashFakeRunner{fn: bashEmitting(nil, bashLines(1, 3000))}, fsys, map[string]any{"command": "x"})
	if err != nil {
		t.Fatal(err)
	}
	path, _ := onlySpill(t, fsys)
	u := updates[1]
	b, _ := loop.MarshalNoEscape(u.Details)
	if !strings.Contains(string(b), `"truncatedBy":"lines","totalLines":3000,`) ||
		!strings.HasSuffix(string(b), `"fullOutputPath":"`+path+`"}`) {
		t.Errorf("update details %s", bashTailOf(string(b), 300))
	}
	if u.Content[0].Text != strings.TrimSuffix(bashLines(1001, 3000), "\n") {
		t.Errorf("update text %q", bashTailOf(u.Content[0].Text, 100))
	}
}

func TestBashSpillNoFS(t *testing.T) {
	tool := NewBash(&bashFakeRunner{fn: bashEmitting(nil, bashLines(1, 3000))}, nil, bashTestInfo())
	res, err := tool.Execute(t.Context(), "c", map[string]any{"command": "x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Full output: not saved (no file system for the spill file)]"; !strings.HasSuffix(res.Content[0].Text, want) {
		t.Errorf("text ends %q", bashTailOf(res.Content[0].Text, 100))
	}
}

// TestBashNoGoroutineLeak: the spill writer and the throttle timer are gone
// once Execute returns (timers may take a moment to unwind).
func TestBashNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 20 {
		fsys := newBashMemFS(bashWorkDir, bashSpillDir)
		r := &bashFakeRunner{fn: randomChunks(bytes.Repeat([]byte("leak?\n"), 50000), 9, 8<<10)}
		if _, err, _ := runBash(t, t.Context(), r, fsys, map[string]any{"command": "x"}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		runtime.Gosched()
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines before, %d after:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}
