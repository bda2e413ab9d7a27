package tools

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"

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

// NewLs returns pi's ls tool on fsys. When the entry limit was reached
// and the 50 KB cap cut the listing too, the entry-limit notice has no "Use limit" hint and byteCapAdvice follows
// pi's "50.0KB limit reached".
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

	// One round trip where the backend lists with what each entry leads to
	// (ops.ListFS); the steps one by one otherwise, or when that failed
	// (they say exactly what failed).
	if l, ok := t.fsys.(ops.ListFS); ok {
		if fi, ents, err := l.ListDir(ctx, dir); err == nil {
			if !fi.IsDir() {
				return nil, errors.New("Not a directory: " + dir)
			}
			names := make([]string, len(ents))
			known := make(map[string]bool, len(ents))
			gone := map[string]bool{}
			for i, e := range ents {
				names[i] = decodeString([]byte(e.Name))
				if names[i] != e.Name {
					continue // stat the decoded name, as pi does
				}
				if e.OK {
					known[names[i]] = e.Mode.IsDir()
				} else {
					gone[names[i]] = true
				}
			}
			sortNames(names)
			return t.collect(ctx, dir, names, limit, known, gone, true)
		}
	}
	// pi's existsSync: any failure means "not found", except that a broken
	// connection must not look like a missing path.
	fi, err := t.fsys.Stat(ctx, dir)
	if err != nil {
		var um userMessager
		if errors.Is(err, ops.ErrTransport) || errors.As(err, &um) {
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
	known := make(map[string]bool, len(ents)) // name → is a directory
	for i, e := range ents {
		// Node decodes names as UTF-8 (invalid bytes become U+FFFD), and
		// then stats the decoded name: such entries vanish, as in pi.
		names[i] = decodeString([]byte(e.Name()))
		if names[i] == e.Name() && e.Type()&fs.ModeSymlink == 0 {
			known[names[i]] = e.IsDir()
		}
	}
	sortNames(names)
	// Following a link is the only way stat can disagree with the entry's
	// own type, so only links need a stat — once one stat shows that the
	// directory can be searched at all (without search permission every
	// stat fails and pi lists nothing). On a remote target each stat is a
	// round trip.
	trustTypes := false
	for _, n := range names {
		if _, ok := known[n]; ok {
			_, err := t.fsys.Stat(ctx, path.Join(dir, n))
			if errors.Is(err, ops.ErrTransport) {
				return nil, err
			}
			trustTypes = err == nil
			break
		}
	}

	return t.collect(ctx, dir, names, limit, known, nil, trustTypes)
}

// collect walks the sorted names as pi does, stopping once limit entries
// are collected, and formats the listing. Names in known (when trustTypes)
// take their type from there and names in gone are dropped, without a
// stat; the stats of a stretch of other names run concurrently (each is a
// round trip on a remote target) and are used in order.
func (t *lsTool) collect(ctx context.Context, dir string, names []string, limit int, known, gone map[string]bool, trustTypes bool) (*loop.Result, error) {
	var out []string
	i := 0
	for i < len(names) && len(out) < limit {
		if err := checkAbort(ctx); err != nil {
			return nil, err
		}
		batch := names[i:min(len(names), i+min(limit-len(out), lsStatBatch))]
		if !trustTypes {
			known = nil
		}
		entries, err := t.statAll(ctx, dir, batch, known, gone)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e != "" {
				out = append(out, e)
			}
		}
		i += len(batch)
	}
	limitReached := len(out) >= limit && i < len(names)
	if len(out) == 0 {
		return loop.TextResult("(empty directory)", nil), nil
	}

	tr := truncateHead(strings.Join(out, "\n"), jsMaxSafeInteger, defaultMaxBytes)
	text := tr.Content
	details := map[string]any{}
	var notices []string
	if limitReached {
		n := strconv.Itoa(limit) + " entries limit reached"
		if !tr.Truncated {
			// pi's hint, unless the byte cap cut the output.
			n += ". Use limit=" + strconv.Itoa(2*limit) + " for more"
		}
		notices = append(notices, n)
		details["entryLimitReached"] = limit
	}
	if tr.Truncated {
		notices = append(notices, formatSize(defaultMaxBytes)+" limit reached")
		if limitReached {
			notices = append(notices, byteCapAdvice(tr.OutputLines, "entries", "use find with a pattern or bash for the rest"))
		}
		details["truncation"] = tr
	}
	if len(notices) > 0 {
		text += "\n\n[" + strings.Join(notices, ". ") + "]"
		return loop.TextResult(text, details), nil
	}
	return loop.TextResult(text, nil), nil
}

// lsStatBatch and lsStatParallel bound the stats in flight.
const (
	lsStatBatch    = 64
	lsStatParallel = 8
)

// statAll stats dir/name for each name (following symbolic links) and
// returns the display names in order: "name/" for a directory, "" for an
// entry whose stat failed (pi drops those silently: broken links vanish).
// A transport failure fails the listing. Names in known (entries that are
// not symbolic links) take their type from there without a stat.
func (t *lsTool) statAll(ctx context.Context, dir string, names []string, known, gone map[string]bool) ([]string, error) {
	out := make([]string, len(names))
	errs := make([]error, len(names))
	sem := make(chan struct{}, lsStatParallel)
	var wg sync.WaitGroup
	for i, name := range names {
		if gone[name] {
			continue
		}
		if isDir, ok := known[name]; ok {
			out[i] = name
			if isDir {
				out[i] += "/"
			}
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			fi, err := t.fsys.Stat(ctx, path.Join(dir, name))
			switch {
			case err != nil:
				errs[i] = err
			case fi.IsDir():
				out[i] = name + "/"
			default:
				out[i] = name
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if errors.Is(err, ops.ErrTransport) {
			return nil, err
		}
	}
	return out, nil
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
