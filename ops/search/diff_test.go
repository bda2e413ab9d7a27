package search

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// Differential tests: random trees with random ignore files, searched by the
// engine and by the real rg / fd; the results must agree (order aside).

var (
	diffNames    = []string{"a.txt", "b.md", "c.log", "keep.log", ".hid", "x", "sub", "build", "dir", "A.TXT", "top.txt", "nm"}
	diffPatterns = []string{"*.log", "/build/", "a*", "!keep*", "sub/", "**/x/*.txt", "d?r", "[ab]*.txt", "x/**",
		"*.md", "!*.md", "/top.txt", "sub/*.txt", ".hid", "nm/", "!a.txt", "*.TXT", "build", "{a,b}.*", "x/"}
	diffGlobs = []string{"", "", "*.txt", "!*.log", "sub/**", "*.{md,log}", "!x", "**/a.txt", "x/*", "*.TXT"}
	diffFinds = []string{"*", "*.txt", "*.TXT", "a*", "x", "sub/*", "**/x/*", "*/a.txt", "[ab]*", "*.{md,log}", "build", "**/sub/**"}
)

func randomTree(t *testing.T, rnd *rand.Rand, git bool) string {
	t.Helper()
	root := t.TempDir()
	var fill func(dir string, depth int)
	fill = func(dir string, depth int) {
		for _, name := range diffNames {
			if rnd.Intn(3) != 0 {
				continue
			}
			p := filepath.Join(dir, name)
			if depth < 3 && rnd.Intn(2) == 0 {
				os.MkdirAll(p, 0o755)
				fill(p, depth+1)
				continue
			}
			os.WriteFile(p, []byte("needle "+name+"\n"), 0o644)
		}
		for _, ign := range []string{".gitignore", ".ignore"} {
			if rnd.Intn(3) != 0 {
				continue
			}
			var lines []string
			for i := 0; i < 1+rnd.Intn(3); i++ {
				lines = append(lines, diffPatterns[rnd.Intn(len(diffPatterns))])
			}
			os.WriteFile(filepath.Join(dir, ign), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
		}
		if rnd.Intn(6) == 0 {
			os.Symlink("a.txt", filepath.Join(dir, "link"))
		}
	}
	fill(root, 0)
	if git {
		os.MkdirAll(filepath.Join(root, ".git", "info"), 0o755)
		os.WriteFile(filepath.Join(root, ".git", "info", "exclude"), []byte(diffPatterns[rnd.Intn(len(diffPatterns))]+"\n"), 0o644)
	}
	return root
}

func TestGrepDifferentialRG(t *testing.T) {
	needTool(t, "rg")
	rnd := rand.New(rand.NewSource(1))
	fails := 0
	for i := 0; i < diffIterations() && fails < 5; i++ {
		root := randomTree(t, rnd, i%3 != 0)
		q := ops.GrepQuery{Pattern: "needle", Path: root, Glob: diffGlobs[rnd.Intn(len(diffGlobs))]}
		want, err1 := collectGrep(t, engineGrep, q)
		got, err2 := collectGrep(t, rgGrep, q)
		if err1 != nil || err2 != nil || !equal(sortedByFile(want), sortedByFile(got)) {
			fails++
			t.Errorf("tree %d glob %q:\nengine %q (%v)\nrg     %q (%v)\n%s", i, q.Glob, sortedByFile(want), err1, sortedByFile(got), err2, dumpIgnores(root))
		}
	}
}

func TestFindDifferentialFD(t *testing.T) {
	needTool(t, "fdfind", "fd")
	rnd := rand.New(rand.NewSource(2))
	fails := 0
	for i := 0; i < diffIterations() && fails < 5; i++ {
		// Always a repository: fd 8 honours .gitignore only inside one.
		root := randomTree(t, rnd, true)
		q := ops.FindQuery{Pattern: diffFinds[rnd.Intn(len(diffFinds))], Path: root}
		want, err1 := collectFind(t, engineFind, q)
		got, err2 := collectFind(t, fdFind, q)
		if err1 != nil || err2 != nil || !equal(sortedPaths(want), sortedPaths(got)) {
			fails++
			t.Errorf("tree %d pattern %q:\nengine %q (%v)\nfd     %q (%v)\n%s", i, q.Pattern, sortedPaths(want), err1, sortedPaths(got), err2, dumpIgnores(root))
		}
	}
}

// diffIterations is 25, or SEARCH_DIFF_ITER for a longer run.
func diffIterations() int {
	var n int
	if _, err := fmt.Sscan(os.Getenv("SEARCH_DIFF_ITER"), &n); err == nil && n > 0 {
		return n
	}
	return 25
}

func dumpIgnores(root string) string {
	var b strings.Builder
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		switch info.Name() {
		case ".gitignore", ".ignore", "exclude":
			data, _ := os.ReadFile(p)
			fmt.Fprintf(&b, "  %s: %q\n", rel, data)
		default:
			fmt.Fprintf(&b, "  %s\n", rel)
		}
		return nil
	})
	return b.String()
}
