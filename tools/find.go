package tools

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/search"
)

const findDescription = "Search for files by glob pattern. Returns matching file paths relative to the search directory. Respects .gitignore. Output is truncated to 1000 results or 50KB (whichever is hit first)."

var findSchema = objectSchema(
	stringParam("pattern", "Glob pattern relative to the search directory, e.g. 'src/**/*.ts'. Without '/', e.g. '*.ts', it matches file names at any depth", true),
	stringParam("path", "Directory to search in (default: current directory)", false),
	numberParam("limit", "Maximum number of results (default: 1000)", false),
)

const findDefaultLimit = 1000

type findTool struct {
	fsys ops.FS
	info ops.Info
}

// NewFind returns pi's find tool on fsys with fd's semantics (search.Find:
// the backend's FindFS when it has one, else the engine over its file
// system). Texts follow pi's fd path: "<L> results limit reached. Use
// limit=<2L> for more, or refine pattern"; fd's error texts for a search
// path that is not a directory and for an invalid glob; "Path not found:
// <abs>" for a missing one. When the count limit was reached and the 50 KB
// cap cut the output too, a larger limit would show no more: the count
// notice then has no "Use limit" hint (pi's text on its glob path) and
// byteCapAdvice says what would help. The byte cap alone keeps pi's text.
func NewFind(fsys ops.FS, info ops.Info) loop.Tool { return &findTool{fsys: fsys, info: info} }

func (*findTool) Name() string                { return "find" }
func (*findTool) Label() string               { return "find" }
func (*findTool) Description() string         { return findDescription }
func (*findTool) Parameters() json.RawMessage { return findSchema }
func (*findTool) Mode() loop.Mode             { return loop.Parallel }

type findArgs struct {
	Pattern string   `json:"pattern"`
	Path    *string  `json:"path"`
	Limit   *float64 `json:"limit"`
}

type findDetails struct {
	ResultLimitReached int         `json:"resultLimitReached,omitempty"`
	Truncation         *truncation `json:"truncation,omitempty"`
}

func (t *findTool) Execute(ctx context.Context, _ string, args map[string]any, _ loop.UpdateFunc) (*loop.Result, error) {
	if err := checkAbort(ctx); err != nil {
		return nil, err
	}
	var a findArgs
	if err := loop.DecodeArgs(args, &a); err != nil {
		return nil, err
	}
	return abortable(ctx, func() (*loop.Result, error) { return t.find(ctx, &a) })
}

func (t *findTool) find(ctx context.Context, a *findArgs) (*loop.Result, error) {
	p := "."
	if a.Path != nil && *a.Path != "" {
		p = *a.Path
	}
	searchPath := resolveToCwd(p, t.info.WorkDir, t.info.Home)
	limit := jsLimit(a.Limit, findDefaultLimit)
	st, err := t.fsys.Stat(ctx, searchPath)
	switch {
	case err != nil && errors.Is(err, ops.ErrTransport):
		return nil, err
	case err != nil:
		return nil, textErr("Path not found: "+searchPath, err)
	case !st.IsDir():
		return nil, errors.New("[fd error]: Search path '" + searchPath + "' is not a directory.\n[fd error]: No valid search paths given.")
	}
	q := &ops.FindQuery{
		Pattern: strings.TrimPrefix(a.Pattern, "./"),
		Path:    searchPath,
		// One more than the limit detects overflow (pi 1.6).
		MaxResults: limit + 1,
	}
	var results []string
	err = search.Find(ctx, t.fsys, q, func(rel string) error {
		results = append(results, rel)
		return nil
	})
	if ctx.Err() != nil {
		return nil, errAborted
	}
	if err != nil {
		var ge *search.GlobError
		if errors.As(err, &ge) {
			return nil, errors.New("[fd error]: " + ge.Error())
		}
		if len(results) == 0 {
			return nil, err
		}
	}
	if len(results) == 0 {
		return loop.TextResult("No files found matching pattern", nil), nil
	}
	limitReached := len(results) > limit
	if limitReached {
		results = results[:limit]
	}
	tr := truncateHead(strings.Join(results, "\n"), maxSafeInteger, defaultMaxBytes)
	out := tr.Content
	var d findDetails
	var notices []string
	if limitReached {
		n := strconv.Itoa(limit) + " results limit reached"
		if !tr.Truncated {
			n += ". Use limit=" + strconv.Itoa(limit*2) + " for more, or refine pattern"
		}
		notices = append(notices, n)
		d.ResultLimitReached = limit
	}
	if tr.Truncated {
		notices = append(notices, formatSize(defaultMaxBytes)+" limit reached")
		if limitReached {
			notices = append(notices, byteCapAdvice(tr.OutputLines, "results", "refine pattern or narrow path"))
		}
		d.Truncation = &tr
	}
	if len(notices) == 0 {
		return loop.TextResult(out, nil), nil
	}
	out += "\n\n[" + strings.Join(notices, ". ") + "]"
	return loop.TextResult(out, &d), nil
}

// byteCapAdvice is the notice added after pi's "50.0KB limit reached" by
// find, grep and ls when the count limit was reached too: the byte cap cut
// the output before the count did, so a larger limit shows no more; what
// helps instead is what.
func byteCapAdvice(shown int, noun, what string) string {
	return "Only the first " + strconv.Itoa(shown) + " " + noun + " fit: a larger limit shows no more, " + what
}
