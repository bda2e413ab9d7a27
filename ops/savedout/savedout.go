package savedout

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// ErrTotal is wrapped by the error of a file the total cut or kept from
// being created.
var ErrTotal = errors.New("the sandbox's saved outputs reached their total")

// maxEntries bounds the measure of a root: a root with more entries than
// that (a command made them) is counted as far as these go.
const maxEntries = 10000

// Root is the spill root of a spill file: the parent of its directory.
func Root(file string) string { return path.Dir(path.Dir(file)) }

// Total is the bound info gives: its SavedOutputTotal, the default when
// zero, none (0) when negative.
func Total(info ops.Info) int64 {
	switch {
	case info.SavedOutputTotal < 0:
		return 0
	case info.SavedOutputTotal == 0:
		return ops.DefaultSavedOutputTotal
	}
	return info.SavedOutputTotal
}

// Error is the error of a file cut by total.
func Error(total int64) error {
	return fmt.Errorf("%w of %s (up --max-saved-output; remove saved outputs to make room)", ErrTotal, Size(total))
}

// Note ends a file whose saving stopped after written bytes, for why (a
// write error, or Error's).
func Note(written int64, why error) string {
	return fmt.Sprintf("\n[pi-sandbox: output after the first %d bytes was not saved: %v]\n", written, why)
}

// Size spells n bytes for people: "4 GiB", "512 MiB", "1000 bytes".
func Size(n int64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// root is what this process counts of one spill root.
type root struct {
	base  int64 // measured at the last Start, files being written left out
	files map[*File]bool
}

var (
	mu    sync.Mutex
	roots = map[string]*root{}
)

// File is one file being written under a root.
type File struct {
	root    string
	name    string
	total   int64 // 0: no bound
	written int64
	done    bool
}

// Start measures the root of name (a spill file about to be created) and
// registers the file. total 0 means no bound: nothing is measured.
func Start(ctx context.Context, fsys ops.FS, name string, total int64) *File {
	f := &File{root: Root(name), name: name, total: total}
	if total <= 0 {
		return f
	}
	mu.Lock()
	r := roots[f.root]
	if r == nil {
		r = &root{files: map[*File]bool{}}
		roots[f.root] = r
	}
	skip := map[string]bool{name: true}
	for g := range r.files {
		skip[g.name] = true
	}
	r.files[f] = true
	mu.Unlock()
	// Measured outside the lock; a file that starts meanwhile is counted
	// by its writes, and maybe by the measure too (a conservative count).
	used := measure(ctx, fsys, f.root, name, skip)
	mu.Lock()
	r.base = used
	mu.Unlock()
	return f
}

// measure sums the sizes of the regular files in dir and in its
// subdirectories, leaving out skip; where dir cannot be listed, those of
// file's directory.
func measure(ctx context.Context, fsys ops.FS, dir, file string, skip map[string]bool) int64 {
	var sum int64
	seen := 0
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		ents, err := fsys.ReadDir(ctx, dir)
		if err != nil {
			return
		}
		for _, e := range ents {
			if seen++; seen > maxEntries {
				return
			}
			p := path.Join(dir, e.Name())
			switch {
			case e.IsDir() && depth == 0:
				walk(p, 1)
			case e.Type().IsRegular() && !skip[p]:
				if fi, err := e.Info(); err == nil {
					sum += fi.Size()
				}
			}
		}
	}
	if _, err := fsys.ReadDir(ctx, dir); err != nil {
		// The root is out of reach (a confined view): the file's own
		// directory is what can be counted.
		walk(path.Join(dir, path.Base(path.Dir(file))), 1)
		return sum
	}
	walk(dir, 0)
	return sum
}

// Room reports whether the total leaves room for a byte more.
func (f *File) Room() bool { return f.total <= 0 || f.take(1, false) == 1 }

// Take returns how many of n more bytes the total leaves room for and
// counts them as written.
func (f *File) Take(n int) int { return int(f.take(int64(n), true)) }

func (f *File) take(n int64, count bool) int64 {
	if f.total <= 0 {
		if count {
			f.written += n
		}
		return n
	}
	mu.Lock()
	defer mu.Unlock()
	r := roots[f.root]
	used := r.base
	for g := range r.files {
		used += g.written
	}
	if room := f.total - used; n > room {
		n = max(room, 0)
	}
	if count {
		f.written += n
	}
	return n
}

// Total is the file's bound (0: none).
func (f *File) Total() int64 { return f.total }

// Done ends the file's count: its bytes now count as the root's. It is
// safe to call twice.
func (f *File) Done() {
	if f.total <= 0 || f.done {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	f.done = true
	r := roots[f.root]
	delete(r.files, f)
	r.base += f.written
	if len(r.files) == 0 {
		delete(roots, f.root)
	}
}
