package search

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// Find searches through fsys's FindFS capability when it has one that is
// supported, else with FindFS (the engine) over the core file system.
func Find(ctx context.Context, fsys ops.FS, q *ops.FindQuery, fn func(rel string) error) error {
	if f, ok := fsys.(ops.FindFS); ok {
		err := f.Find(ctx, q, fn)
		if !errors.Is(err, ops.ErrUnsupported) {
			return err
		}
	}
	return FindFS(ctx, fsys, q, fn)
}

// FindFS is the file-finding engine: fd's semantics as pi runs it (--glob
// --hidden, .gitignore respected as with --no-require-git) over any ops.FS.
//
//   - The pattern is a glob; "*" and "?" do not cross "/", "**" does.
//   - Smart case: an all-lowercase pattern matches case-insensitively, any
//     uppercase letter makes it case-sensitive.
//   - Without "/" it matches entry base names at any depth. With "/" it is
//     anchored at the search root ("src/*.ts" does not match
//     "pkg/src/b.ts"; "**/src/*.ts" does); a pattern starting with "/" is
//     matched against absolute paths.
//   - Hidden entries are listed; the .git directory never is (fd 9's default;
//     fd 8 lists it); .gitignore, .ignore and .fdignore rules apply, also from
//     the root's ancestors.
//   - Results come in sorted walk order, directories with a trailing "/",
//     symbolic links as themselves (not followed).
func FindFS(ctx context.Context, fsys ops.FS, q *ops.FindQuery, fn func(rel string) error) error {
	root, ok := cleanAbs(q.Path)
	if !ok {
		return fmt.Errorf("search: find: path %q is not absolute", q.Path)
	}
	match, err := compileFindPattern(q.Pattern, root)
	if err != nil {
		return err
	}
	st, err := fsys.Stat(ctx, root)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return ops.PathError("scandir", root, ops.ENOTDIR)
	}
	n := 0
	w := &walker{fsys: fsys, root: root, customName: ".fdignore"}
	w.visit = func(abs, rel string, typ fs.FileMode) (bool, error) {
		if !match(abs, rel) {
			return true, nil
		}
		out := rel
		if typ.IsDir() {
			out += "/"
		}
		if err := fn(out); err != nil {
			return false, err
		}
		n++
		if q.MaxResults > 0 && n >= q.MaxResults {
			return false, errStop
		}
		return true, nil
	}
	err = w.walk(ctx)
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

// compileFindPattern returns a predicate over (absolute path, path relative
// to root). It mirrors pi's fd invocation: a relative path pattern is
// prefixed with the glob-escaped root and matched against the full path
// (--full-path), a name pattern against the base name.
func compileFindPattern(pattern, root string) (func(abs, rel string) bool, error) {
	fold := strings.ToLower(pattern) == pattern
	full := strings.Contains(pattern, "/")
	glob := pattern
	if full && !strings.HasPrefix(pattern, "/") {
		glob = globEscape(strings.TrimSuffix(root, "/")) + "/" + pattern
	}
	src, err := globRegexp(glob, fold)
	if err != nil {
		return nil, err
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, &GlobError{Glob: glob, Detail: err.Error()}
	}
	if full {
		return func(abs, rel string) bool { return re.MatchString(abs) }, nil
	}
	return func(abs, rel string) bool { return re.MatchString(path.Base(rel)) }, nil
}
