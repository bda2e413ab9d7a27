package search

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/internal/shquote"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

// fdArgs is pi's fd argv for q, plus "--exclude .git"
// (the engine never lists the repository directory; fd 8 would).
// --no-require-git is added by the script when the installed fd knows it.
func fdArgs(q *ops.FindQuery, root string) []string {
	args := []string{"--color=never", "--hidden", "--glob"}
	if q.MaxResults > 0 {
		args = append(args, "--max-results", fmt.Sprint(q.MaxResults))
	}
	pattern := q.Pattern
	if strings.Contains(pattern, "/") {
		args = append(args, "--full-path")
		if !strings.HasPrefix(pattern, "/") {
			pattern = globEscape(strings.TrimSuffix(root, "/")) + "/" + pattern
		}
		// The prefix defeats fd's smart case; restore it.
		if strings.ToLower(q.Pattern) == q.Pattern {
			args = append(args, "--ignore-case")
		}
	}
	return append(args, "--exclude", ".git", "--", pattern, root)
}

// FindWithFD runs the query with fd (Debian's fdfind) in the target, for
// backends without the shim. It returns an error wrapping ops.ErrUnsupported
// when neither is installed. An fd without --no-require-git (fd < 8.7)
// honours .gitignore only inside a git repository. Results are in fd's
// order (multi-threaded, not stable).
func FindWithFD(ctx context.Context, r ops.Runner, q *ops.FindQuery, fn func(rel string) error) error {
	root, ok := cleanAbs(q.Path)
	if !ok {
		return fmt.Errorf("search: find: path %q is not absolute", q.Path)
	}
	if _, err := compileFindPattern(q.Pattern, root); err != nil {
		return err
	}
	quoted := make([]string, 0, 16)
	for _, a := range fdArgs(q, root) {
		quoted = append(quoted, shquote.Quote(a))
	}
	script := `FD=$(command -v fdfind || command -v fd) || exit 127; ` +
		`NRG=; "$FD" --no-require-git --version >/dev/null 2>&1 && NRG=--no-require-git; ` +
		`exec "$FD" $NRG ` + strings.Join(quoted, " ")

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	prefix := strings.TrimSuffix(root, "/") + "/"
	var other []string
	n := 0
	w := &lineWriter{cancel: cancel}
	w.handle = func(line []byte) error {
		s := strings.TrimSpace(string(line))
		rel, ok := strings.CutPrefix(s, prefix)
		if !ok || rel == "" {
			if s != "" {
				other = append(other, s)
			}
			return nil
		}
		n++
		return fn(rel)
	}
	err := r.Run(runCtx, &ops.Cmd{Command: script, Dir: "/", Output: w})
	w.flush()
	if w.err != nil {
		return w.err
	}
	var ee *ops.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee) && ee.Code == 127 && n == 0:
		return fmt.Errorf("search: fd is not installed in the target: %w", ops.ErrUnsupported)
	case n > 0:
		return nil
	}
	msg := strings.TrimSpace(strings.Join(other, "\n"))
	if rest, ok := strings.CutPrefix(msg, "[fd error]: error parsing glob '"); ok {
		if glob, detail, ok := strings.Cut(rest, "': "); ok {
			return &GlobError{Glob: glob, Detail: detail}
		}
	}
	if strings.Contains(msg, "is not a directory") || strings.Contains(msg, "does not exist") {
		return ops.PathError("scandir", root, ops.ENOENT)
	}
	if msg == "" {
		return fmt.Errorf("search: fd: %w", err)
	}
	return fmt.Errorf("search: fd: %s", msg)
}
