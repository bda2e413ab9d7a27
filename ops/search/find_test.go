package search

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

func findTree(t *testing.T) string {
	return mkTree(t, map[string]string{
		".git/HEAD":         "x",
		".gitignore":        "*.log\n/build/\n",
		".fdignore":         "secret.txt\n",
		"a.ts":              "",
		"README.MD":         "",
		"notes.md":          "",
		"app.log":           "",
		"secret.txt":        "",
		"build/out.js":      "",
		"src/a.ts":          "",
		"src/B.ts":          "",
		"pkg/src/b.ts":      "",
		"pkg/src/deep/c.ts": "",
		".hidden/h.ts":      "",
		"sub/":              "",
		"sub/.gitignore":    "gen/\n",
		"sub/gen/x.ts":      "",
		"sub/y.ts":          "",
	})
}

type findCase struct {
	name, pattern string
	want          []string
}

var findCases = []findCase{
	{"name-any-depth", "*.ts", []string{".hidden/h.ts", "a.ts", "pkg/src/b.ts", "pkg/src/deep/c.ts", "src/B.ts", "src/a.ts", "sub/y.ts"}},
	{"smart-case-lower", "*.md", []string{"README.MD", "notes.md"}},
	{"smart-case-upper", "*.MD", []string{"README.MD"}},
	{"smart-case-upper-name", "B*", []string{"src/B.ts"}},
	{"smart-case-lower-name", "b*", []string{"pkg/src/b.ts", "src/B.ts"}},
	{"anchored", "src/*.ts", []string{"src/B.ts", "src/a.ts"}},
	{"anchored-any", "**/src/*.ts", []string{"pkg/src/b.ts", "src/B.ts", "src/a.ts"}},
	{"anchored-doublestar", "pkg/**", []string{"pkg/src/", "pkg/src/b.ts", "pkg/src/deep/", "pkg/src/deep/c.ts"}},
	{"directories", "src", []string{"pkg/src/", "src/"}},
	{"all", "*", []string{".fdignore", ".gitignore", ".hidden/", ".hidden/h.ts", "README.MD", "a.ts", "notes.md",
		"pkg/", "pkg/src/", "pkg/src/b.ts", "pkg/src/deep/", "pkg/src/deep/c.ts", "src/", "src/B.ts", "src/a.ts",
		"sub/", "sub/.gitignore", "sub/y.ts"}},
	{"class", "[ab].ts", []string{"a.ts", "pkg/src/b.ts", "src/B.ts", "src/a.ts"}},
	{"alternation", "*.{md,log}", []string{"README.MD", "notes.md"}},
	{"none", "*.zzz", nil},
}

func TestFindGolden(t *testing.T) {
	root := findTree(t)
	for _, c := range findCases {
		t.Run(c.name, func(t *testing.T) {
			got, err := collectFind(t, engineFind, ops.FindQuery{Pattern: c.pattern, Path: root})
			if err != nil {
				t.Fatal(err)
			}
			if !equal(got, c.want) {
				t.Errorf("got\n%q\nwant\n%q", got, c.want)
			}
		})
	}
}

// TestFindAgainstFD runs every golden query through the real fd (pi's argv,
// via FindWithFD) and compares, order-insensitive. The tree is a git
// repository, so fd 8 (no --no-require-git) honours .gitignore too.
func TestFindAgainstFD(t *testing.T) {
	needTool(t, "fdfind", "fd")
	root := findTree(t)
	for _, c := range findCases {
		t.Run(c.name, func(t *testing.T) {
			got, err := collectFind(t, fdFind, ops.FindQuery{Pattern: c.pattern, Path: root})
			if err != nil {
				t.Fatal(err)
			}
			if !equal(sortedPaths(got), sortedPaths(c.want)) {
				t.Errorf("fd gave\n%q\nengine wants\n%q", sortedPaths(got), sortedPaths(c.want))
			}
		})
	}
}

func sortedPaths(s []string) []string {
	out := append([]string(nil), s...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func TestFindMaxResults(t *testing.T) {
	root := findTree(t)
	got, err := collectFind(t, engineFind, ops.FindQuery{Pattern: "*.ts", Path: root, MaxResults: 3})
	want := []string{".hidden/h.ts", "a.ts", "pkg/src/b.ts"}
	if err != nil || !equal(got, want) {
		t.Fatalf("%q, %v; want %q", got, err, want)
	}
}

func TestFindNoGitRepo(t *testing.T) {
	// Without a repository .gitignore still applies (pi passes
	// --no-require-git when no .git exists).
	root := mkTree(t, map[string]string{".gitignore": "skip.txt\n", "skip.txt": "", "keep.txt": ""})
	got, err := collectFind(t, engineFind, ops.FindQuery{Pattern: "*.txt", Path: root})
	if err != nil || !equal(got, []string{"keep.txt"}) {
		t.Fatalf("%q, %v", got, err)
	}
}

func TestFindErrors(t *testing.T) {
	root := findTree(t)
	_, err := collectFind(t, engineFind, ops.FindQuery{Pattern: "*", Path: filepath.Join(root, "nope")})
	if ops.ErrnoOf(err) != ops.ENOENT {
		t.Errorf("missing dir: %v", err)
	}
	_, err = collectFind(t, engineFind, ops.FindQuery{Pattern: "*", Path: filepath.Join(root, "a.ts")})
	if ops.ErrnoOf(err) != ops.ENOTDIR {
		t.Errorf("file: %v", err)
	}
	_, err = collectFind(t, engineFind, ops.FindQuery{Pattern: "[a", Path: root})
	if !errors.Is(err, ops.ErrBadPattern) || err.Error() != "error parsing glob '[a': unclosed character class; missing ']'" {
		t.Errorf("bad glob: %v", err)
	}
	_, err = collectFind(t, engineFind, ops.FindQuery{Pattern: "{a", Path: root})
	if err == nil || err.Error() != "error parsing glob '{a': unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)" {
		t.Errorf("bad glob: %v", err)
	}
}
