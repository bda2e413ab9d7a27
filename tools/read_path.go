package tools

import (
	"context"
	"regexp"
	"strings"

	"golang.org/x/text/unicode/norm"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

var amPm = regexp.MustCompile(`(?i) (AM|PM)\.`)

// resolveReadPath is pi's resolveReadPath (§3.4) with the existence checks
// made on the target, not the host. For an abs that does not exist it tries the
// macOS screenshot name (U+202F before AM/PM), the NFD form, curly
// apostrophes, and NFD with curly apostrophes, returning the first that
// exists, else abs.
func resolveReadPath(ctx context.Context, fsys ops.FS, abs string) string {
	exists := func(p string) bool { return fsys.Access(ctx, p, ops.AccessExists) == nil }
	nfd := norm.NFD.String(abs)
	for _, v := range []string{
		amPm.ReplaceAllString(abs, "\u202F$1."),
		nfd,
		strings.ReplaceAll(abs, "'", "\u2019"),
		strings.ReplaceAll(nfd, "'", "\u2019"),
	} {
		if v != abs && exists(v) {
			return v
		}
	}
	return abs
}
