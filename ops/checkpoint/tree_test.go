package checkpoint

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
)

func openStore(t testing.TB) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustCreate(t testing.TB, s *Store, root string, opt Options) Result {
	t.Helper()
	r, err := s.Create(root, opt)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func nameStatus(cs []Change) string {
	var b bytes.Buffer
	for _, c := range cs {
		p := c.Path
		if (c.Old != nil && c.Old.Type == Dir && c.Status == 'D') || (c.New != nil && c.New.Type == Dir && c.Status == 'A') {
			p += "/"
		}
		fmt.Fprintf(&b, "%c\t%q\n", c.Status, p)
	}
	return b.String()
}
