package treetest

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// Node is one path of a generated tree.
type Node struct {
	Path string
	Kind byte // 'f' file, 'd' directory, 'l' link
	Mode uint32
	Data []byte
	Link string
}

var names = []string{"a", "b", "c.txt", "d.go", "x y", "\xff\xfe", "é", "-n", "a-b", "a.b", "README"}

// Rand draws a small tree: files (empty, text, binary, now and then
// a large one), empty and filled directories, links in and out.
func Rand(r *rand.Rand) []Node {
	var out []Node
	seen := map[string]bool{}
	var add func(dir string, depth int)
	add = func(dir string, depth int) {
		n := r.Intn(5)
		for i := 0; i < n; i++ {
			name := names[r.Intn(len(names))]
			p := name
			if dir != "" {
				p = dir + "/" + name
			}
			if seen[p] {
				continue
			}
			seen[p] = true
			switch k := r.Intn(10); {
			case k < 5:
				out = append(out, Node{Path: p, Kind: 'f', Mode: []uint32{0o644, 0o755, 0o600, 0o444, 0o750}[r.Intn(5)], Data: randData(r)})
			case k < 7 && depth < 3:
				out = append(out, Node{Path: p, Kind: 'd', Mode: []uint32{0o755, 0o700, 0o750, 0o555}[r.Intn(4)]})
				add(p, depth+1)
			case k < 9:
				out = append(out, Node{Path: p, Kind: 'l', Link: []string{"a", "../a", "/etc/passwd", "../../../../outside", "dangling", "b/c.txt", "\xff"}[r.Intn(7)]})
			default:
				out = append(out, Node{Path: p, Kind: 'd', Mode: 0o755})
			}
		}
	}
	add("", 0)
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func randData(r *rand.Rand) []byte {
	switch r.Intn(8) {
	case 0:
		return nil
	case 1:
		b := make([]byte, r.Intn(300))
		r.Read(b)
		return b
	case 2:
		if r.Intn(20) == 0 {
			b := make([]byte, 1<<20+r.Intn(1000))
			r.Read(b)
			return b
		}
	}
	var b strings.Builder
	for i, n := 0, r.Intn(12); i < n; i++ {
		fmt.Fprintf(&b, "line %d\n", r.Intn(4))
	}
	if r.Intn(3) == 0 {
		b.WriteString("no newline")
	}
	return []byte(b.String())
}

// Materialize writes tr under dir (which exists, empty).
func Materialize(t testing.TB, dir string, tr []Node) {
	t.Helper()
	for _, n := range tr {
		p := filepath.Join(dir, n.Path)
		var err error
		switch n.Kind {
		case 'd':
			err = os.Mkdir(p, 0o700)
		case 'f':
			if err = os.WriteFile(p, n.Data, 0o600); err == nil {
				err = os.Chmod(p, fs.FileMode(n.Mode))
			}
		case 'l':
			err = os.Symlink(n.Link, p)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := len(tr) - 1; i >= 0; i-- {
		if tr[i].Kind == 'd' {
			if err := os.Chmod(filepath.Join(dir, tr[i].Path), fs.FileMode(tr[i].Mode)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// Clear empties dir (making its directories writable first).
func Clear(t testing.TB, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o755)
		}
		return nil
	})
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
}

// Snapshot describes the tree under dir, one line per path, with its
// type, mode bits, and content hash or link target.
func Snapshot(t testing.TB, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		switch st.Mode & syscall.S_IFMT {
		case syscall.S_IFDIR:
			lines = append(lines, fmt.Sprintf("%q dir %o", rel, st.Mode&0o7777))
		case syscall.S_IFLNK:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			lines = append(lines, fmt.Sprintf("%q link %q", rel, l))
		case syscall.S_IFREG:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			lines = append(lines, fmt.Sprintf("%q file %o %x", rel, st.Mode&0o7777, sha256.Sum256(b)))
		default:
			lines = append(lines, fmt.Sprintf("%q other", rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}
