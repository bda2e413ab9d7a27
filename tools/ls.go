package tools

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"path"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/text/collate"
	"golang.org/x/text/language"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

const lsDescription = "List directory contents. Returns entries sorted alphabetically, with '/' suffix for directories. Includes dotfiles. Output is truncated to 500 entries or 50KB (whichever is hit first)."

var lsSchema = objectSchema(
	stringParam("path", "Directory to list (default: current directory)", false),
	numberParam("limit", "Maximum number of entries to return (default: 500)", false),
)

const (
	lsDefaultLimit = 500
	// jsMaxSafeInteger is JavaScript's Number.MAX_SAFE_INTEGER: ls truncates
	// by bytes only and reports this as maxLines.
	jsMaxSafeInteger = 1<<53 - 1
)

type lsTool struct {
	fsys ops.FS
	info ops.Info
}

// NewLs returns pi's ls tool on fsys.
func NewLs(fsys ops.FS, info ops.Info) loop.Tool { return &lsTool{fsys: fsys, info: info} }

func (*lsTool) Name() string                { return "ls" }
func (*lsTool) Label() string               { return "ls" }
func (*lsTool) Description() string         { return lsDescription }
func (*lsTool) Parameters() json.RawMessage { return lsSchema }
func (*lsTool) Mode() loop.Mode             { return loop.Parallel }

type lsArgs struct {
	Path  *string  `json:"path"`
	Limit *float64 `json:"limit"`
}

func (t *lsTool) Execute(ctx context.Context, _ string, args map[string]any, _ loop.UpdateFunc) (*loop.Result, error) {
	if err := checkAbort(ctx); err != nil {
		return nil, err
	}
	var a lsArgs
	if err := loop.DecodeArgs(args, &a); err != nil {
		return nil, err
	}
	return abortable(ctx, func() (*loop.Result, error) { return t.list(ctx, &a) })
}

func (t *lsTool) list(ctx context.Context, a *lsArgs) (*loop.Result, error) {
	p := "."
	if a.Path != nil {
		p = *a.Path
	}
	dir := resolveToCwd(p, t.info.WorkDir, t.info.Home)
	limit := lsDefaultLimit
	if a.Limit != nil {
		limit = int(max(1, min(math.Floor(*a.Limit), math.MaxInt32)))
	}

	// pi's existsSync: any failure means "not found", except that a broken
	// connection must not look like a missing path.
	fi, err := t.fsys.Stat(ctx, dir)
	if err != nil {
		if errors.Is(err, ops.ErrTransport) {
			return nil, err
		}
		return nil, errors.New("Path not found: " + dir)
	}
	if !fi.IsDir() {
		return nil, errors.New("Not a directory: " + dir)
	}
	ents, err := t.fsys.ReadDir(ctx, dir)
	if err != nil {
		if errors.Is(err, ops.ErrTransport) {
			return nil, err
		}
		return nil, textErr("Cannot read directory: "+nodeError(err, "scandir", dir), err)
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		// Node decodes names as UTF-8 (invalid bytes become U+FFFD), and
		// then stats the decoded name: such entries vanish, as in pi.
		names[i] = decodeString([]byte(e.Name()))
	}
	sortNames(names)

	var out []string
	limitReached := false
	for _, name := range names {
		if len(out) >= limit {
			limitReached = true
			break
		}
		if err := checkAbort(ctx); err != nil {
			return nil, err
		}
		fi, err := t.fsys.Stat(ctx, path.Join(dir, name))
		if err != nil {
			if errors.Is(err, ops.ErrTransport) {
				return nil, err
			}
			continue // pi drops entries it cannot stat (broken links)
		}
		if fi.IsDir() {
			name += "/"
		}
		out = append(out, name)
	}
	if len(out) == 0 {
		return loop.TextResult("(empty directory)", nil), nil
	}

	tr := truncateHead(strings.Join(out, "\n"), jsMaxSafeInteger, defaultMaxBytes)
	text := tr.Content
	details := map[string]any{}
	var notices []string
	if limitReached {
		notices = append(notices, strconv.Itoa(limit)+" entries limit reached. Use limit="+strconv.Itoa(2*limit)+" for more")
		details["entryLimitReached"] = limit
	}
	if tr.Truncated {
		notices = append(notices, formatSize(defaultMaxBytes)+" limit reached")
		details["truncation"] = tr
	}
	if len(notices) > 0 {
		text += "\n\n[" + strings.Join(notices, ". ") + "]"
		return loop.TextResult(text, details), nil
	}
	return loop.TextResult(text, nil), nil
}

// sortNames orders names as pi's ls does, a.toLowerCase().localeCompare(
// b.toLowerCase()) — ICU's root collation — through x/text/collate with the
// root locale (language.Und, punctuation not ignorable): whitespace and
// punctuation before digits before letters, accents secondary to base
// letters, case folded first. Names equal under it keep readdir's byte
// order.
func sortNames(names []string) {
	c := collate.New(language.Und)
	keys := make([]string, len(names))
	var buf collate.Buffer
	for i, n := range names {
		keys[i] = string(c.KeyFromString(&buf, strings.ToLower(n)))
		buf.Reset()
	}
	idx := make([]int, len(names))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return keys[idx[i]] < keys[idx[j]] })
	sorted := make([]string, len(names))
	for i, k := range idx {
		sorted[i] = names[k]
	}
	copy(names, sorted)
}
