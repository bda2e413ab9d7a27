package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/loop"
)

// Redacted replaces every secret in results.
const Redacted = "[REDACTED]"

// minSecretLen is the shortest environment value treated as a secret.
const minSecretLen = 4

// redactor replaces secrets with one regular expression: the literal values
// (longest first, so a value containing another is replaced whole) and the
// patterns, as alternatives.
type redactor struct {
	re *regexp.Regexp
	// starts are where the secrets' matches can start, for redacting a
	// stream ([redactWriter]); unbounded is whether a pattern's matches
	// have no length bound.
	starts    []streamStart
	unbounded bool
}

// compileRedactor reads the named variables' values through values (nil:
// none are read); extra are more literal secrets.
func compileRedactor(p RedactPolicy, values func(string) []string, extra ...string) (*redactor, error) {
	var lits []string
	for _, v := range extra {
		if len(v) >= minSecretLen {
			lits = append(lits, v)
		}
	}
	if values != nil {
		for _, name := range p.Env {
			for _, v := range values(name) {
				if len(v) >= minSecretLen {
					lits = append(lits, v)
				}
			}
		}
	}
	slices.SortFunc(lits, func(a, b string) int { return len(b) - len(a) })
	lits = slices.Compact(lits)
	var alts []string
	for _, l := range lits {
		alts = append(alts, regexp.QuoteMeta(l))
	}
	for _, pat := range p.Patterns {
		if _, err := regexp.Compile(pat); err != nil {
			return nil, fmt.Errorf("sandbox: policy: redact pattern: %w", err)
		}
		if regexp.MustCompile(pat).MatchString("") {
			return nil, fmt.Errorf("sandbox: policy: redact pattern %q matches the empty string", pat)
		}
		alts = append(alts, "(?:"+pat+")")
	}
	if len(alts) == 0 {
		return nil, nil
	}
	re, err := regexp.Compile(strings.Join(alts, "|"))
	if err != nil {
		return nil, fmt.Errorf("sandbox: policy: redact: %w", err)
	}
	r := &redactor{re: re, starts: streamStarts(lits, p.Patterns)}
	r.unbounded = slices.ContainsFunc(r.starts, func(s streamStart) bool { return s.unbounded })
	return r, nil
}

func (r *redactor) text(s string) (string, bool) {
	if r == nil || !r.re.MatchString(s) {
		return s, false
	}
	return r.re.ReplaceAllLiteralString(s, Redacted), true
}

// result returns res with secrets replaced in text blocks and in every
// string of details, or res itself when it holds none.
func (r *redactor) result(res *loop.Result) *loop.Result {
	if r == nil || res == nil {
		return res
	}
	var content []loop.Content
	for i, c := range res.Content {
		if c.Type != "text" {
			continue
		}
		t, ok := r.text(c.Text)
		if !ok {
			continue
		}
		if content == nil {
			content = slices.Clone(res.Content)
		}
		content[i].Text = t
	}
	details, dChanged := r.details(res.Details)
	if content == nil && !dChanged {
		return res
	}
	out := *res
	if content != nil {
		out.Content = content
		out.StructuredContent = nil
	}
	if dChanged {
		out.Details = details
	}
	return &out
}

// details works on the JSON form of details: tools keep typed structs there.
func (r *redactor) details(d any) (any, bool) {
	if d == nil {
		return nil, false
	}
	b, err := loop.MarshalNoEscape(d)
	if err != nil || !r.re.Match(b) {
		return d, false
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return d, false
	}
	v, changed := r.walk(v)
	return v, changed
}

func (r *redactor) walk(v any) (any, bool) {
	switch x := v.(type) {
	case string:
		return r.text(x)
	case map[string]any:
		changed := false
		for k, e := range x {
			if ne, ok := r.walk(e); ok {
				x[k], changed = ne, true
			}
		}
		return x, changed
	case []any:
		changed := false
		for i, e := range x {
			if ne, ok := r.walk(e); ok {
				x[i], changed = ne, true
			}
		}
		return x, changed
	}
	return v, false
}

// raw redacts a JSON document's text, keeping it valid JSON.
func (r *redactor) raw(b json.RawMessage) json.RawMessage {
	s, ok := r.text(string(b))
	if !ok {
		return b
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	q, _ := loop.MarshalNoEscape(s)
	return q
}

// middleware redacts final and partial results, and marks the call's
// context so the output of the commands it runs is redacted as it streams,
// before any window is cut from it ([withStreamRedaction]).
func (r *redactor) middleware() loop.ExecMiddleware {
	return func(next loop.ExecHandler) loop.ExecHandler {
		return func(ctx context.Context, call *loop.Call, update loop.UpdateFunc) *loop.Result {
			ctx = withStreamRedaction(ctx, r)
			up := update
			if update != nil {
				up = func(p *loop.Result) { update(r.result(p)) }
			}
			return r.result(next(ctx, call, up))
		}
	}
}
