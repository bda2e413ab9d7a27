package tools

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"strconv"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/search"
)

const grepDescription = "Search file contents for a pattern. Returns matching lines with file paths and line numbers. Respects .gitignore. Output is truncated to 100 matches or 50KB (whichever is hit first). Long lines are truncated to 500 chars."

var grepSchema = objectSchema(
	stringParam("pattern", "Search pattern (regex or literal string)", true),
	stringParam("path", "Directory or file to search (default: current directory)", false),
	stringParam("glob", "Filter files by glob pattern relative to path, e.g. 'src/**/*.ts'. Without '/', e.g. '*.ts', it matches file names at any depth", false),
	boolParam("ignoreCase", "Case-insensitive search (default: false)", false),
	boolParam("literal", "Treat pattern as literal string instead of regex (default: false)", false),
	numberParam("context", "Number of lines to show before and after each match (default: 0)", false),
	numberParam("limit", "Maximum number of matches to return (default: 100)", false),
)

const (
	grepDefaultLimit = 100
	// maxSafeInteger is JavaScript's Number.MAX_SAFE_INTEGER: pi truncates
	// grep, find and ls output with it as the line cap (bytes only), and it
	// shows up as details.truncation.maxLines.
	maxSafeInteger = 1<<53 - 1
)

type grepTool struct {
	fsys ops.FS
	info ops.Info
}

// NewGrep returns pi's grep tool searching fsys with ripgrep's semantics
// (search.Grep: the backend's GrepFS when it has one, else the engine over
// its file system).
//
// An invalid regular expression fails with one fixed text of ours on every
// backend, "regex parse error: <detail>" with Go's description of the
// problem, e.g. "regex parse error: missing closing ): `(foo`" (ripgrep's own
// text is a multi-line diagram). An invalid glob fails with ripgrep's text,
// "error parsing glob '<glob>': <detail>". When the match limit was
// reached and the 50 KB cap cut the output too, the match-limit notice has no "Use limit" hint and byteCapAdvice
// follows pi's "50.0KB limit reached".
func NewGrep(fsys ops.FS, info ops.Info) loop.Tool { return &grepTool{fsys: fsys, info: info} }

func (*grepTool) Name() string                { return "grep" }
func (*grepTool) Label() string               { return "grep" }
func (*grepTool) Description() string         { return grepDescription }
func (*grepTool) Parameters() json.RawMessage { return grepSchema }
func (*grepTool) Mode() loop.Mode             { return loop.Parallel }

type grepArgs struct {
	Pattern    string   `json:"pattern"`
	Path       *string  `json:"path"`
	Glob       *string  `json:"glob"`
	IgnoreCase *bool    `json:"ignoreCase"`
	Literal    *bool    `json:"literal"`
	Context    *float64 `json:"context"`
	Limit      *float64 `json:"limit"`
}

func (t *grepTool) Execute(ctx context.Context, _ string, args map[string]any, _ loop.UpdateFunc) (*loop.Result, error) {
	if err := checkAbort(ctx); err != nil {
		return nil, err
	}
	var a grepArgs
	if err := loop.DecodeArgs(args, &a); err != nil {
		return nil, err
	}
	return abortable(ctx, func() (*loop.Result, error) { return t.grep(ctx, &a) })
}

// jsLimit is pi's max(1, floor(limit ?? def)).
func jsLimit(v *float64, def int) int {
	if v == nil || math.IsNaN(*v) {
		return def
	}
	f := math.Floor(*v)
	if f < 1 {
		return 1
	}
	if f > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(f)
}

// errLimit stops the search once a match beyond the limit proves that more
// results exist.
var errLimit = errors.New("tools: grep: limit reached")

type grepDetails struct {
	MatchLimitReached int         `json:"matchLimitReached,omitempty"`
	Truncation        *truncation `json:"truncation,omitempty"`
	LinesTruncated    bool        `json:"linesTruncated,omitempty"`
}

func (t *grepTool) grep(ctx context.Context, a *grepArgs) (*loop.Result, error) {
	p := "."
	if a.Path != nil && *a.Path != "" {
		p = *a.Path
	}
	searchPath := resolveToCwd(p, t.info.WorkDir, t.info.Home)
	fi, err := t.fsys.Stat(ctx, searchPath)
	if err != nil {
		if errors.Is(err, ops.ErrTransport) {
			return nil, err
		}
		return nil, textErr("Path not found: "+searchPath, err)
	}
	if kind := irregularKind(fi); kind != "" {
		// rg would read it: a FIFO without a writer holds the call until
		// the abort, /dev/zero never ends.
		return nil, errNotRegular("grep", searchPath, kind)
	}
	contextLines := 0
	if a.Context != nil && *a.Context > 0 {
		contextLines = int(min(math.Floor(*a.Context), math.MaxInt32))
	}
	limit := jsLimit(a.Limit, grepDefaultLimit)
	q := &ops.GrepQuery{
		Pattern:    a.Pattern,
		Path:       searchPath,
		IgnoreCase: a.IgnoreCase != nil && *a.IgnoreCase,
		Literal:    a.Literal != nil && *a.Literal,
		Context:    contextLines,
		// One more than the limit: a further match proves more exist.
		MaxMatches: limit + 1,
		MaxText:    grepMaxText,
	}
	if a.Glob != nil {
		q.Glob = stripDotSlash(*a.Glob)
	}

	var (
		out            grepOutput
		matches        int
		limitReached   bool
		linesTruncated bool
		lastPath       string
		lastLine       int
	)
	err = search.Grep(ctx, t.fsys, q, func(ev ops.GrepEvent) error {
		if matches >= limit {
			// Only the trailing context of the limit-th match is kept.
			if ev.Match {
				limitReached = true
				return errLimit
			}
			if ev.Path != lastPath || ev.Line > lastLine+contextLines {
				return nil
			}
		}
		text, cut := truncateLine(decodeString(ev.Text), grepMaxLineLength)
		linesTruncated = linesTruncated || cut || ev.Truncated
		rel := decodeString([]byte(ev.Path))
		sep := "-"
		if ev.Match {
			sep = ":"
			matches++
			lastPath, lastLine = ev.Path, ev.Line
		}
		out.add(rel + sep + strconv.Itoa(ev.Line) + sep + " " + text)
		return nil
	})
	if ctx.Err() != nil {
		return nil, errAborted
	}
	if err != nil && !errors.Is(err, errLimit) {
		return nil, grepErr(err)
	}
	if matches == 0 {
		return loop.TextResult("No matches found", nil), nil
	}
	tr := out.truncation()
	text := tr.Content
	var d grepDetails
	var notices []string
	if limitReached {
		n := strconv.Itoa(limit) + " matches limit reached"
		if !tr.Truncated {
			// pi's hint, unless the byte cap cut the output.
			n += ". Use limit=" + strconv.Itoa(limit*2) + " for more, or refine pattern"
		}
		notices = append(notices, n)
		d.MatchLimitReached = limit
	}
	if tr.Truncated {
		notices = append(notices, formatSize(defaultMaxBytes)+" limit reached")
		if limitReached {
			notices = append(notices, byteCapAdvice(tr.OutputLines, "lines", "refine pattern or narrow path or glob"))
		}
		d.Truncation = &tr
	}
	if linesTruncated {
		notices = append(notices, "Some lines truncated to "+strconv.Itoa(grepMaxLineLength)+" chars. Use read tool to see full lines")
		d.LinesTruncated = true
	}
	if len(notices) == 0 {
		return loop.TextResult(text, nil), nil
	}
	text += "\n\n[" + strings.Join(notices, ". ") + "]"
	return loop.TextResult(text, &d), nil
}

// grepMaxText is how much of a line the engine reports: more than enough
// for grepMaxLineLength UTF-16 units (a unit takes at most 3 bytes), so a
// line cut by the engine is one truncateLine would cut too.
const grepMaxText = 4 << 10

// grepOutput collects the output lines with bounded memory: pi joins them
// and applies truncateHead with only the byte cap, so once the kept lines
// exceed it the rest is only counted (a search with millions of
// matches held them all).
type grepOutput struct {
	kept       []string
	full       bool
	n          int  // lines added
	newlines   int  // "\n" in all the lines joined (a path may hold one)
	endsNL     bool // the last line ends in "\n"
	totalBytes int  // joined size of all lines
}

func (o *grepOutput) add(line string) {
	if o.n > 0 {
		o.totalBytes++
		o.newlines++
	}
	o.n++
	o.totalBytes += len(line)
	o.newlines += strings.Count(line, "\n")
	o.endsNL = strings.HasSuffix(line, "\n")
	if o.full {
		return
	}
	o.kept = append(o.kept, line)
	o.full = o.totalBytes > defaultMaxBytes
}

// truncation is truncateHead of all the lines joined by "\n"; past the
// byte cap the kept lines decide the content, the counts the totals (as
// splitLines counts them).
func (o *grepOutput) truncation() truncation {
	tr := truncateHead(strings.Join(o.kept, "\n"), maxSafeInteger, defaultMaxBytes)
	if o.full {
		tr.TotalLines = o.newlines + 1
		if o.endsNL {
			tr.TotalLines--
		}
		tr.TotalBytes = o.totalBytes
	}
	return tr
}

// stripDotSlash removes a leading "./" from a glob, after a "!" if any.
func stripDotSlash(g string) string {
	if rest, ok := strings.CutPrefix(g, "!"); ok {
		return "!" + strings.TrimPrefix(rest, "./")
	}
	return strings.TrimPrefix(g, "./")
}

// grepErr turns a search failure into the tool's error. Pattern and glob
// errors carry their fixed texts; file errors get Node's form.
func grepErr(err error) error {
	var pe *search.PatternError
	var ge *search.GlobError
	switch {
	case errors.As(err, &pe):
		return pe
	case errors.As(err, &ge):
		return ge
	case errors.Is(err, ops.ErrTransport):
		return err
	}
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		if _, ok := errnoOf(err); ok {
			return nodeErr(err, pathErr.Op, pathErr.Path)
		}
	}
	return err
}
