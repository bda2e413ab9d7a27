package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// walkInfo is one path found by walk with its stat data (ie.mode is the
// whole st_mode, type bits included).
type walkInfo struct {
	rel string
	ie  indexEntry
}

func (w walkInfo) isDir() bool  { return w.ie.mode&syscall.S_IFMT == syscall.S_IFDIR }
func (w walkInfo) isLink() bool { return w.ie.mode&syscall.S_IFMT == syscall.S_IFLNK }
func (w walkInfo) bits() uint32 { return w.ie.mode & 0o7777 }

// walker lists a tree: directories are read by up to GOMAXPROCS
// goroutines (the work is one fstatat per entry, relative to its open
// directory), each appending what it found under the lock.
type walker struct {
	exclude   []string
	storeSt   syscall.Stat_t
	haveStore bool
	sem       chan struct{}
	wg        sync.WaitGroup

	mu      sync.Mutex
	infos   []walkInfo
	skipped []string
	err     error
}

// walk lists the tree under root (root itself excluded), sorted by path,
// leaving out the store and excluded paths; special files go to skipped.
func (s *Store) walk(root string, exclude []string) (infos []walkInfo, skipped []string, err error) {
	rfi, err := os.Stat(root)
	if err != nil {
		return nil, nil, fmt.Errorf("checkpoint: workspace: %w", err)
	}
	if !rfi.IsDir() {
		return nil, nil, fmt.Errorf("checkpoint: workspace %s is not a directory", root)
	}
	w := &walker{exclude: exclude, sem: make(chan struct{}, max(runtime.GOMAXPROCS(0)-1, 0))}
	w.haveStore = syscall.Stat(s.dir, &w.storeSt) == nil
	w.dir(root, "")
	w.wg.Wait()
	if w.err != nil {
		return nil, nil, w.err
	}
	sort.Slice(w.infos, func(i, j int) bool { return w.infos[i].rel < w.infos[j].rel })
	sort.Strings(w.skipped)
	return w.infos, w.skipped, nil
}

func (w *walker) fail(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
}

func (w *walker) failed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err != nil
}

// dir reads one directory; its subdirectories go to another goroutine
// when one is free, else are read here.
func (w *walker) dir(dir, rel string) {
	if w.failed() {
		return
	}
	f, err := os.Open(dir)
	if err != nil {
		w.fail(fmt.Errorf("checkpoint: cannot read %s: %w", relOrDot(rel), errors.Unwrap(err)))
		return
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		w.fail(fmt.Errorf("checkpoint: cannot read %s: %w", relOrDot(rel), err))
		return
	}
	dfd := int(f.Fd())
	var infos []walkInfo
	var skipped []string
	var subdirs []walkInfo
	for _, n := range names {
		r := n
		if rel != "" {
			r = rel + "/" + n
		}
		if excluded(w.exclude, r) {
			continue
		}
		var st unix.Stat_t
		// Relative to the open directory: no path walk per entry.
		if err := unix.Fstatat(dfd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, syscall.ENOENT) {
				continue // removed meanwhile
			}
			w.fail(fmt.Errorf("checkpoint: cannot stat %s: %w", r, err))
			return
		}
		in := walkInfo{r, statEntry(&st)}
		switch st.Mode & syscall.S_IFMT {
		case syscall.S_IFREG, syscall.S_IFLNK:
			infos = append(infos, in)
		case syscall.S_IFDIR:
			if w.haveStore && st.Dev == w.storeSt.Dev && st.Ino == w.storeSt.Ino {
				continue
			}
			infos = append(infos, in)
			subdirs = append(subdirs, in)
		default:
			skipped = append(skipped, r)
		}
	}
	w.mu.Lock()
	w.infos = append(w.infos, infos...)
	w.skipped = append(w.skipped, skipped...)
	w.mu.Unlock()
	for _, sd := range subdirs {
		p := filepath.Join(dir, filepath.Base(sd.rel))
		select {
		case w.sem <- struct{}{}:
			w.wg.Add(1)
			go func() {
				defer w.wg.Done()
				defer func() { <-w.sem }()
				w.dir(p, sd.rel)
			}()
		default:
			w.dir(p, sd.rel)
		}
	}
}
