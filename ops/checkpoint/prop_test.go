package checkpoint

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
	"github.com/pi-sandbox/pi-sandbox/ops/checkpoint/treetest"
)

// TestRestoreAndDiffProperty: over random pairs of trees A and B,
// restore(checkpoint(A)) over B gives A bit for bit, and the name-status
// of A against B agrees with git's on files and links.
func TestRestoreAndDiffProperty(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		testenv.SkipOrFail(t, "no git: "+err.Error())
	}
	defer func(d bool) { durable = d }(durable)
	durable = false
	n := 1000
	if testing.Short() {
		n = 100
	}
	s := openStore(t)
	tmp := t.TempDir()
	root, ga, gb := filepath.Join(tmp, "root"), filepath.Join(tmp, "ga"), filepath.Join(tmp, "gb")
	for _, d := range []string{root, ga, gb} {
		os.Mkdir(d, 0o755)
	}
	r := rand.New(rand.NewSource(1))
	for i := 0; i < n; i++ {
		a, b := treetest.Rand(r), treetest.Rand(r)
		treetest.Clear(t, root)
		treetest.Materialize(t, root, a)
		want := treetest.Snapshot(t, root)
		cp := mustCreate(t, s, root, Options{Name: "a"})
		treetest.Clear(t, root)
		treetest.Materialize(t, root, b)

		d, err := s.Changes(root, cp.ID, "")
		if err != nil {
			t.Fatal(err)
		}
		if i%4 == 0 { // git is the slow part
			treetest.Clear(t, ga)
			treetest.Clear(t, gb)
			treetest.Materialize(t, ga, a)
			treetest.Materialize(t, gb, b)
			if got, want := ours(d.Changes), gitNameStatus(t, ga, gb); got != want {
				t.Fatalf("tree pair %d: name-status\n%s\ngit says\n%s", i, got, want)
			}
		}

		if _, _, err := s.Restore(root, cp.ID); err != nil {
			t.Fatalf("tree pair %d: %v", i, err)
		}
		if got := treetest.Snapshot(t, root); got != want {
			t.Fatalf("tree pair %d: restored\n%s\nwant\n%s", i, got, want)
		}
		if i%25 == 24 { // keep the store small: remove all but the newest
			all, _ := s.List()
			for _, c := range all[:len(all)-1] {
				if _, err := s.Remove(c.ID); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// ours is the name-status of files and links, as git shows it: a type
// change between file and directory is a deletion and an addition, a mode
// change git does not record is none.
func ours(cs []Change) string {
	var lines []string
	for _, c := range fileChanges(cs) {
		if c.Status == 'M' && c.Old.Blob == c.New.Blob && c.Old.Link == c.New.Link && gitMode(c.Old) == gitMode(c.New) {
			continue
		}
		lines = append(lines, fmt.Sprintf("%c %q", c.Status, c.Path))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func gitNameStatus(t *testing.T, a, b string) string {
	cmd := exec.Command("git", "-c", "core.quotePath=false", "diff", "--no-index", "--no-renames", "--name-status", "-z", a, b)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Fatalf("git diff: %v", err)
		}
	}
	f := bytes.Split(bytes.TrimSuffix(out, []byte{0}), []byte{0})
	var lines []string
	for i := 0; i+1 < len(f); i += 2 {
		p := string(f[i+1])
		p = strings.TrimPrefix(strings.TrimPrefix(p, a+"/"), b+"/")
		st := string(f[i])
		if st == "T" {
			lines = append(lines, fmt.Sprintf("D %q", p), fmt.Sprintf("A %q", p))
			continue
		}
		lines = append(lines, fmt.Sprintf("%s %q", st, p))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
