package tools

import (
	"path"
	"strings"
	"testing"
)

func TestResolveToCwdGolden(t *testing.T) {
	const home = "/home/u"
	tests := []struct{ in, cwd, want string }{
		{"rel/f.txt", "/some/cwd", "/some/cwd/rel/f.txt"},
		{"@rel/f.txt", "/some/cwd", "/some/cwd/rel/f.txt"},
		{"@@x", "/c", "/c/@x"},
		{"~draft.md", "/cwd", "/cwd/~draft.md"},
		{"/abs/../x", "/cwd", "/x"},
		{"a\u00A0b", "/cwd", "/cwd/a b"},
		{"a\u2000b\u200Ac\u202Fd\u205Fe\u3000f", "/cwd", "/cwd/a b c d e f"},
		{"~/x", "/cwd", "/home/u/x"},
		{"~", "/cwd", "/home/u"},
		{"@~/x", "/cwd", "/home/u/x"},
		{"file:///tmp/a%20b", "/cwd", "/tmp/a b"},
		{"file://localhost/etc/x", "/cwd", "/etc/x"},
		{"file://host/etc/x", "/cwd", "/cwd/file:/host/etc/x"},
		{".", "/cwd", "/cwd"},
		{"", "/cwd", "/cwd"},
		{"a/../../..", "/cwd", "/"},
		{"sub/", "/cwd", "/cwd/sub"},
		{"x", "~/proj", "/home/u/proj/x"},
		{"//x//y/", "/cwd", "/x/y"},
	}
	for _, tt := range tests {
		if got := resolveToCwd(tt.in, tt.cwd, home); got != tt.want {
			t.Errorf("resolveToCwd(%q, %q) = %q, want %q", tt.in, tt.cwd, got, tt.want)
		}
	}
}

func FuzzResolveToCwd(f *testing.F) {
	for _, s := range []string{"rel/f.txt", "@x", "~/x", "/a/../b", "file:///a%20b", "a\u00A0b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got := resolveToCwd(p, "/cwd", "/home/u")
		if !path.IsAbs(got) || path.Clean(got) != got {
			t.Fatalf("resolveToCwd(%q) = %q: not absolute and clean", p, got)
		}
		if strings.ContainsRune(got, '\u00A0') {
			t.Fatalf("resolveToCwd(%q) kept a no-break space", p)
		}
	})
}
