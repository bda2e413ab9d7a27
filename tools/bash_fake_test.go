package tools

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"path"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

// bashFakeRunner runs a Go function instead of a command: the test controls
// every chunk and the outcome.
type bashFakeRunner struct {
	fn    func(ctx context.Context, cmd *ops.Cmd) error
	mu    sync.Mutex
	calls []*ops.Cmd
}

func (r *bashFakeRunner) Run(ctx context.Context, cmd *ops.Cmd) error {
	r.mu.Lock()
	r.calls = append(r.calls, cmd)
	r.mu.Unlock()
	return r.fn(ctx, cmd)
}

func (r *bashFakeRunner) ncalls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

// bashEmitting returns a runner function that writes chunks and returns err.
func bashEmitting(err error, chunks ...string) func(context.Context, *ops.Cmd) error {
	return func(_ context.Context, cmd *ops.Cmd) error {
		for _, c := range chunks {
			cmd.Output.Write([]byte(c))
		}
		return err
	}
}

// bashMemFS is an in-memory target file system with the calls bash uses:
// Stat (directories only), MkdirAll, OpenWriter.
type bashMemFS struct {
	ops.FS // nil: other methods panic

	mu    sync.Mutex
	dirs  map[string]bool
	files map[string]*bytes.Buffer
	flags map[string]int
	perms map[string]fs.FileMode
	// gate, when set, makes every Write wait for a value (a slow remote).
	gate     chan struct{}
	writeErr error
	openErr  error
}

func newBashMemFS(dirs ...string) *bashMemFS {
	m := &bashMemFS{
		dirs:  map[string]bool{},
		files: map[string]*bytes.Buffer{},
		flags: map[string]int{},
		perms: map[string]fs.FileMode{},
	}
	for _, d := range dirs {
		m.dirs[d] = true
	}
	return m
}

type bashDirInfo struct{ name string }

func (d bashDirInfo) Name() string       { return path.Base(d.name) }
func (d bashDirInfo) Size() int64        { return 0 }
func (d bashDirInfo) Mode() fs.FileMode  { return fs.ModeDir | 0o755 }
func (d bashDirInfo) ModTime() time.Time { return time.Time{} }
func (d bashDirInfo) IsDir() bool        { return true }
func (d bashDirInfo) Sys() any           { return nil }

func (m *bashMemFS) Stat(_ context.Context, name string) (fs.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dirs[name] {
		return bashDirInfo{name}, nil
	}
	return nil, ops.PathError("stat", name, ops.ENOENT)
}

func (m *bashMemFS) MkdirAll(_ context.Context, name string, _ fs.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for d := name; d != "/"; d = path.Dir(d) {
		m.dirs[d] = true
	}
	return nil
}

func (m *bashMemFS) OpenWriter(_ context.Context, name string, flag int, perm fs.FileMode) (io.WriteCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.openErr != nil {
		return nil, m.openErr
	}
	if !m.dirs[path.Dir(name)] {
		return nil, ops.PathError("open", name, ops.ENOENT)
	}
	if _, ok := m.files[name]; ok {
		return nil, ops.PathError("open", name, ops.EEXIST)
	}
	m.files[name] = &bytes.Buffer{}
	m.flags[name] = flag
	m.perms[name] = perm
	return &bashMemWriter{m: m, name: name}, nil
}

func (m *bashMemFS) file(name string) ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.files[name]
	if !ok {
		return nil, false
	}
	return bytes.Clone(b.Bytes()), true
}

func (m *bashMemFS) names() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n []string
	for k := range m.files {
		n = append(n, k)
	}
	return n
}

type bashMemWriter struct {
	m      *bashMemFS
	name   string
	closed bool
}

func (w *bashMemWriter) Write(p []byte) (int, error) {
	if w.m.gate != nil {
		<-w.m.gate
	}
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	if w.closed {
		panic("write after close")
	}
	if w.m.writeErr != nil {
		return 0, w.m.writeErr
	}
	return w.m.files[w.name].Write(p)
}

func (w *bashMemWriter) Close() error {
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	w.closed = true
	return nil
}

const (
	bashWorkDir  = "/w"
	bashSpillDir = "/spill"
)

func bashTestInfo() ops.Info {
	return ops.Info{Backend: "fake", WorkDir: bashWorkDir, SpillDir: bashSpillDir}
}

// runBash executes the tool once and collects its updates.
func runBash(t *testing.T, ctx context.Context, r ops.Runner, fsys ops.FS, args map[string]any) (*loop.Result, error, []*loop.Result) {
	t.Helper()
	var mu sync.Mutex
	var updates []*loop.Result
	tool := NewBash(r, fsys, bashTestInfo())
	res, err := tool.Execute(ctx, "call", args, func(p *loop.Result) {
		mu.Lock()
		defer mu.Unlock()
		cp := *p
		cp.Content = slices.Clone(p.Content)
		updates = append(updates, &cp)
	})
	mu.Lock()
	defer mu.Unlock()
	return res, err, updates
}

// ReadDir lists nothing: the saved-output total (savedout) counts nothing
// but the files the test writes.
func (m *bashMemFS) ReadDir(context.Context, string) ([]fs.DirEntry, error) {
	return nil, fs.ErrNotExist
}
