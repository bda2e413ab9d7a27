package search

import (
	"context"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// overrides are ripgrep's --glob rules: gitignore syntax relative to the
// search root with inverted meaning (a plain glob includes, "!" excludes).
type overrides struct {
	rules      *ruleSet
	whitelists int
}

func newOverrides(root string, globs ...string) (*overrides, error) {
	o := &overrides{rules: &ruleSet{base: root}}
	for _, g := range globs {
		r, ok, err := parseRule(g)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if !r.negated {
			o.whitelists++
		}
		o.rules.rules = append(o.rules.rules, r)
	}
	if len(o.rules.rules) == 0 {
		return nil, nil
	}
	return o, nil
}

// match follows ignore's Override::matched: the last matching glob decides; a
// file that matches no glob while include globs exist is excluded
// (directories are still walked).
func (o *overrides) match(abs string, isDir bool) verdict {
	if o == nil {
		return none
	}
	switch o.rules.match(abs, isDir) {
	case ignored: // a plain glob: include
		return whitelist
	case whitelist: // a "!" glob: exclude
		return ignored
	}
	if o.whitelists > 0 && !isDir {
		return ignored
	}
	return none
}

// walker walks a directory tree the way ripgrep's and fd's shared walker
// does, except that entries are visited in sorted order, one at a time.
type walker struct {
	fsys       ops.FS
	root       string // absolute, clean
	customName string // ".rgignore" or ".fdignore"
	requireGit bool
	over       *overrides
	// visit is called for every entry that survives the filters, with its
	// path relative to root. For a directory, returning descend=false skips
	// it.
	visit func(abs, rel string, typ fs.FileMode) (descend bool, err error)
}

// parentStack reads the ignore files of root's ancestors (ripgrep and fd
// honour them: --no-ignore-parent is off by default).
func (w *walker) parentStack(ctx context.Context) *ignoreStack {
	st := &ignoreStack{requireGit: w.requireGit}
	if w.root == "/" {
		return st
	}
	var dirs []string
	for d := path.Dir(w.root); ; d = path.Dir(d) {
		dirs = append(dirs, d)
		if d == "/" {
			break
		}
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		st = st.push(readRules(ctx, w.fsys, dirs[i], w.customName, nil))
	}
	return st
}

func (w *walker) walk(ctx context.Context) error {
	return w.walkDir(ctx, w.root, "", w.parentStack(ctx))
}

func (w *walker) walkDir(ctx context.Context, dir, rel string, st *ignoreStack) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	entries, err := w.readDir(ctx, dir)
	if err != nil {
		// ripgrep and fd report unreadable directories on stderr and go
		// on; a cancelled context or a broken transport stops the walk.
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if ops.ErrnoOf(err) == "" {
			return err
		}
		return nil
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	names := make(map[string]bool, len(entries))
	for _, e := range entries {
		names[e.Name()] = true
	}
	st = st.push(readRules(ctx, w.fsys, dir, w.customName, names))
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		name := e.Name()
		if name == ".git" {
			// The repository's own directory is never searched (ripgrep 13
			// with --hidden would; fd 9 and pi's remote glob skip it).
			continue
		}
		abs := path.Join(dir, name)
		erel := name
		if rel != "" {
			erel = rel + "/" + name
		}
		typ := e.Type()
		isDir := typ.IsDir()
		v := w.over.match(abs, isDir)
		if v == none {
			v = st.match(abs, isDir)
		}
		if v == ignored {
			continue
		}
		descend, err := w.visit(abs, erel, typ)
		if err != nil {
			return err
		}
		if isDir && descend {
			if err := w.walkDir(ctx, abs, erel, st); err != nil {
				return err
			}
		}
	}
	return nil
}

// typedLister is a file system that lists a directory with its entries'
// types only, without a stat of each (an entry's Info is one, when called):
// all a walk needs. The helper's confined file system offers it for a
// search.
type typedLister interface {
	ReadDirTypes(ctx context.Context, name string) ([]fs.DirEntry, error)
}

func (w *walker) readDir(ctx context.Context, dir string) ([]fs.DirEntry, error) {
	if tl, ok := w.fsys.(typedLister); ok {
		return tl.ReadDirTypes(ctx, dir)
	}
	return w.fsys.ReadDir(ctx, dir)
}

// cleanAbs checks that p is absolute and returns it cleaned.
func cleanAbs(p string) (string, bool) {
	if !strings.HasPrefix(p, "/") {
		return "", false
	}
	return path.Clean(p), true
}
