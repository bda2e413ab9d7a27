package hygiene

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
)

// maxTracked is the largest file the repository may track outside images/
// and testdata/ directories: anything bigger is a binary or a generated blob.
const maxTracked = 1 << 20

// TestNoLargeOrBinaryFiles: no tracked file over 1 MiB outside images/ and
// testdata/, and no compiled test binary (*.test) at all.
func TestNoLargeOrBinaryFiles(t *testing.T) {
	out, err := exec.Command("git", "-C", "../..", "ls-files", "-z").Output()
	if err != nil {
		testenv.SkipOrFail(t, "git ls-files: "+err.Error()+" (not a git checkout?)")
	}
	files := bytes.Split(bytes.TrimSuffix(out, []byte{0}), []byte{0})
	if len(files) < 50 {
		t.Fatalf("git ls-files listed only %d files", len(files))
	}
	for _, f := range files {
		name := string(f)
		if strings.HasSuffix(name, ".test") {
			t.Errorf("%s: a compiled test binary is tracked", name)
		}
		if strings.HasPrefix(name, "images/") || strings.Contains("/"+name, "/testdata/") {
			continue
		}
		fi, err := os.Lstat(filepath.Join("../..", name))
		if err != nil {
			continue // deleted in the work tree
		}
		if fi.Size() > maxTracked {
			t.Errorf("%s: %d bytes, over 1 MiB (outside images/ and testdata/)", name, fi.Size())
		}
	}
}
