package shquote

import (
	"os/exec"
	"testing"
)

// TestQuote runs each quoted word through sh: it must come back unchanged,
// with nothing expanded.
func TestQuote(t *testing.T) {
	for _, s := range []string{"", "plain/path-1.txt", "a b", "it's", "'", "$(rm -rf /)", "`id`", "$HOME", "~", "~/x",
		"*", "a?b", "[ab]", "{a,b}", "a;b", "a|b", "a&b", "a>b", "-n", "K=V", "\n\t", "\\", "\"", "é", "#x", "!x"} {
		out, err := exec.Command("/bin/sh", "-c", "printf '%s|' "+Quote(s)).Output()
		if err != nil || string(out) != s+"|" {
			t.Errorf("Quote(%q) = %s: sh printed %q, %v", s, Quote(s), out, err)
		}
	}
	if got := Quote("/tmp/x_1.txt"); got != "/tmp/x_1.txt" {
		t.Errorf("a plain path is quoted: %s", got)
	}
	if got := Quote("it's"); got != `'it'\''s'` {
		t.Errorf("Quote(it's) = %s", got)
	}
}
