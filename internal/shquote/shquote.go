// Package shquote quotes words for a POSIX shell (sh, dash, bash, busybox
// sh): the one quoter of the backends, the search fallbacks and the test
// suites that build command strings.
package shquote

import "strings"

// Quote returns s as one shell word: bare when it holds only characters no
// shell treats specially (letters, digits and "/._-+=:,@%"), else in single
// quotes, with each "'" written as '\”. The empty string is ”.
func Quote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			strings.ContainsRune("/._-+=:,@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
