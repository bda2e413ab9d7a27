package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// escapeAttempts tries to read or change a file outside the confinement
// roots through the confined tools: absolute paths, traversal, symbolic
// links to a file, a directory and a missing file, /proc/self/root. An
// attempt escapes when the secret shows up in a result or the outside
// directory changes.
func escapeAttempts(ctx context.Context, e *env) []scenResult {
	r := scenResult{Backend: e.name, Scenario: "escape attempts through the confined tools (path confinement on)"}
	secret := fmt.Sprintf("SECRET%08d", rand.IntN(1e8))
	setup := fmt.Sprintf(`set -e
d=$(mktemp -d /tmp/pibench-outside-XXXXXX)
printf '%s\n' > "$d/secret.txt"
ln -sfn "$d" esc-dir; ln -sfn "$d/secret.txt" esc-file; ln -sfn "$d/new.txt" esc-new
echo "$d"`, secret)
	out, err := runOut(ctx, e.raw, "cd "+e.work+" && "+setup, 30*time.Second)
	if err != nil {
		r.Skipped = fmt.Sprintf("setup: %v: %s", err, out)
		return []scenResult{r}
	}
	outside := strings.TrimSpace(out)
	defer runOut(ctx, e.raw, "rm -rf "+outside+"; cd "+e.work+" && rm -f esc-dir esc-file esc-new", 30*time.Second)
	up := strings.Repeat("../", 12)
	type attempt struct {
		desc, tool string
		args       map[string]any
	}
	attempts := []attempt{
		{"read absolute outside path", "read", map[string]any{"path": outside + "/secret.txt"}},
		{"read ../ traversal", "read", map[string]any{"path": up + strings.TrimPrefix(outside, "/") + "/secret.txt"}},
		{"read symlink to an outside file", "read", map[string]any{"path": "esc-file"}},
		{"read through a symlinked directory", "read", map[string]any{"path": "esc-dir/secret.txt"}},
		{"read /proc/self/root/...", "read", map[string]any{"path": "/proc/self/root" + outside + "/secret.txt"}},
		{"write absolute outside path", "write", map[string]any{"path": outside + "/new.txt", "content": "pwned"}},
		{"write through a dangling symlink", "write", map[string]any{"path": "esc-new", "content": "pwned"}},
		{"write through a symlink to an outside file", "write", map[string]any{"path": "esc-file", "content": "pwned"}},
		{"edit through a symlinked directory", "edit", map[string]any{"path": "esc-dir/secret.txt", "edits": []any{map[string]any{"oldText": secret, "newText": "pwned"}}}},
		{"ls a symlinked directory", "ls", map[string]any{"path": "esc-dir"}},
		{"grep an outside directory", "grep", map[string]any{"pattern": "SECRET", "path": outside}},
		{"grep the workdir (symlinks inside)", "grep", map[string]any{"pattern": "SECRET", "path": "."}},
		{"find in a symlinked directory", "find", map[string]any{"pattern": "*", "path": "esc-dir"}},
	}
	r.Trials = len(attempts)
	for _, a := range attempts {
		res := call(ctx, e.lp, a.tool, a.args)
		text := resultText(res)
		escaped := strings.Contains(fullText(res), secret)
		// Did the outside directory change?
		chk, _ := runOut(ctx, e.raw, fmt.Sprintf("cat %s/secret.txt; ls %s", outside, outside), 30*time.Second)
		if !strings.Contains(chk, secret) || strings.Contains(chk, "new.txt") {
			escaped = true
			runOut(ctx, e.raw, fmt.Sprintf("printf '%%s\\n' %s > %s/secret.txt; rm -f %s/new.txt", secret, outside, outside), 30*time.Second)
		}
		verdict := "refused"
		if !res.IsError {
			verdict = "answered (no outside content)"
		}
		if escaped {
			verdict = "ESCAPED"
			r.Failures++
			if r.FirstFail == "" {
				r.FirstFail = a.desc
			}
		}
		r.Details = append(r.Details, fmt.Sprintf("%s — `%s` — %s: %s", a.desc, a.tool, verdict, firstLine(text)))
	}
	return []scenResult{r}
}
