package tools

import (
	"net/url"
	"path"
	"strings"
)

// unicodeSpaces are the characters pi's normalizeUnicodeSpaces turns into an
// ASCII space (§3.1 step 1).
var unicodeSpaces = strings.NewReplacer(
	"\u00A0", " ",
	"\u2000", " ", "\u2001", " ", "\u2002", " ", "\u2003", " ", "\u2004", " ",
	"\u2005", " ", "\u2006", " ", "\u2007", " ", "\u2008", " ", "\u2009", " ",
	"\u200A", " ",
	"\u202F", " ",
	"\u205F", " ",
	"\u3000", " ",
)

// normalizePath is pi's normalizePath for tools (§3.1), POSIX only: unicode
// spaces, one leading "@", "~" and "~/…", then a file:// URL.
func normalizePath(p, home string) string {
	p = unicodeSpaces.Replace(p)
	p = strings.TrimPrefix(p, "@")
	p = expandTilde(p, home)
	if strings.HasPrefix(p, "file://") {
		if fp, ok := fileURLPath(p); ok {
			p = fp
		}
	}
	return p
}

func expandTilde(p, home string) string {
	switch {
	case p == "~":
		return home
	case strings.HasPrefix(p, "~/"):
		return path.Join(home, p[2:])
	}
	return p
}

// fileURLPath is Node's fileURLToPath on POSIX: the host must be empty or
// "localhost" and the path must not contain an encoded "/". A URL it would
// reject is left as it is.
func fileURLPath(s string) (string, bool) {
	u, err := url.Parse(s)
	if err != nil || (u.Host != "" && u.Host != "localhost") {
		return "", false
	}
	if strings.Contains(strings.ToLower(u.EscapedPath()), "%2f") {
		return "", false
	}
	return u.Path, true
}

// resolveToCwd is pi's resolveToCwd (§3.2): a pure string operation that
// normalizes p and makes it absolute against cwd, cleaning "." and "..".
// Symbolic links are not resolved.
func resolveToCwd(p, cwd, home string) string {
	p = normalizePath(p, home)
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	return path.Join("/", expandTilde(cwd, home), p)
}
