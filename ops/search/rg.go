package search

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/internal/shquote"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

// rgArgs is pi's ripgrep argv for q, plus a glob that
// keeps the .git directory out as the engine does. target is "." for a
// directory (the command runs in it) or the file's absolute path.
func rgArgs(q *ops.GrepQuery, target string) []string {
	args := []string{"--no-config", "--json", "--line-number", "--color=never", "--hidden"}
	if q.IgnoreCase {
		args = append(args, "--ignore-case")
	}
	if q.Literal {
		args = append(args, "--fixed-strings")
	}
	args = append(args, "--glob", "!.git")
	if q.Glob != "" {
		args = append(args, "--glob", q.Glob)
	}
	if q.Context > 0 {
		args = append(args, "--context", fmt.Sprint(q.Context))
	}
	return append(args, "--", q.Pattern, target)
}

// rgPatternError turns ripgrep's multi-line "regex parse error:" report (for
// syntax Go accepts and ripgrep 13 does not, such as "\/") into the
// one-line *PatternError every backend reports, with rg's "error: …" line as
// the detail.
func rgPatternError(pattern string, out []string) *PatternError {
	if len(out) == 0 || !strings.HasPrefix(strings.TrimSpace(out[0]), "regex parse error:") {
		return nil
	}
	detail := "invalid pattern"
	for _, l := range out[1:] {
		if d, ok := strings.CutPrefix(strings.TrimSpace(l), "error: "); ok {
			detail = d
			break
		}
	}
	return &PatternError{Pattern: pattern, Detail: detail}
}

// rgText is ripgrep's JSON for arbitrary data: UTF-8 text, or base64 bytes.
type rgText struct {
	Text  *string `json:"text"`
	Bytes string  `json:"bytes"`
}

func (t rgText) raw() []byte {
	if t.Text != nil {
		return []byte(*t.Text)
	}
	b, _ := base64.StdEncoding.DecodeString(t.Bytes)
	return b
}

type rgMessage struct {
	Type string `json:"type"`
	Data struct {
		Path       rgText `json:"path"`
		Lines      rgText `json:"lines"`
		LineNumber int    `json:"line_number"`
	} `json:"data"`
}

// GrepWithRG runs the query with ripgrep in the target (for backends without
// the shim). The pattern is checked by our own parser first, so an invalid
// one fails with the same *PatternError as the engine. It returns an error
// wrapping ops.ErrUnsupported when rg is not installed. Results are in rg's
// order (multi-threaded, not stable across files).
func GrepWithRG(ctx context.Context, r ops.Runner, q *ops.GrepQuery, fn func(ops.GrepEvent) error) error {
	if _, err := compilePattern(q.Pattern, q.IgnoreCase, q.Literal); err != nil {
		return err
	}
	if q.Glob != "" {
		if _, err := newOverrides("/", q.Glob); err != nil {
			return err
		}
	}
	root, ok := cleanAbs(q.Path)
	if !ok {
		return fmt.Errorf("search: grep: path %q is not absolute", q.Path)
	}
	// The shell decides file or directory, so one round trip suffices.
	quote := func(args []string) string {
		qs := make([]string, len(args))
		for i, a := range args {
			qs[i] = shquote.Quote(a)
		}
		return strings.Join(qs, " ")
	}
	qr := shquote.Quote(root)
	script := "command -v rg >/dev/null 2>&1 || exit 127; " +
		"if [ -d " + qr + " ]; then cd " + qr + " && exec rg " + quote(rgArgs(q, ".")) +
		"; else exec rg " + quote(rgArgs(q, root)) + "; fi"

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		other   []string
		summary bool
	)
	lim := &limiter{limit: q.MaxMatches, context: max(q.Context, 0)}
	w := &lineWriter{cancel: cancel}
	w.handle = func(line []byte) error {
		if len(line) == 0 || line[0] != '{' {
			other = append(other, string(line))
			return nil
		}
		var m rgMessage
		if err := json.Unmarshal(line, &m); err != nil {
			other = append(other, string(line))
			return nil
		}
		if m.Type == "summary" {
			summary = true
			return nil
		}
		if m.Type != "match" && m.Type != "context" {
			return nil
		}
		p := string(m.Data.Path.raw())
		if p == root {
			p = path.Base(root)
		} else {
			p = strings.TrimPrefix(p, "./")
		}
		text := m.Data.Lines.raw()
		if t, ok := bytes.CutSuffix(text, []byte{'\n'}); ok {
			text = bytes.TrimSuffix(t, []byte{'\r'})
		}
		ev := ops.GrepEvent{Path: p, Line: m.Data.LineNumber, Match: m.Type == "match", Text: text}
		if q.MaxText > 0 && len(text) > q.MaxText {
			ev.Text, ev.Truncated = text[:q.MaxText], true
		}
		pass, stop := lim.admit(&ev)
		if pass {
			if err := fn(ev); err != nil {
				return err
			}
		}
		if stop {
			return errStop
		}
		return nil
	}
	err := r.Run(runCtx, &ops.Cmd{Command: script, Dir: "/", Output: w})
	w.flush()
	if w.err != nil {
		if errors.Is(w.err, errStop) {
			return nil
		}
		return w.err
	}
	var ee *ops.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee) && ee.Code == 1:
		return nil
	case errors.As(err, &ee) && ee.Code == 127:
		return fmt.Errorf("search: rg is not installed in the target: %w", ops.ErrUnsupported)
	case errors.As(err, &ee) && ee.Code == 2 && summary:
		// Unreadable files: skipped, as the engine does.
		return nil
	case errors.As(err, &ee) && ee.Code == 2:
		if pe := rgPatternError(q.Pattern, other); pe != nil {
			return pe
		}
		if len(other) > 0 && strings.Contains(strings.Join(other, "\n"), "No such file or directory") {
			return ops.PathError("stat", root, ops.ENOENT)
		}
		return fmt.Errorf("search: rg: %s", strings.TrimSpace(strings.Join(other, "\n")))
	}
	return fmt.Errorf("search: rg: %w", err)
}
