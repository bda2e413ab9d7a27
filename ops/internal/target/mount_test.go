package target

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
)

// TestMountUser: the owner of the source, root's keeping the default with
// a note, a source this host cannot see keeping it without one.
func TestMountUser(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(t, "needs root to give a directory to another uid")
	}
	d := t.TempDir()
	owned := filepath.Join(d, "owned")
	os.Mkdir(owned, 0o755)
	if err := os.Chown(owned, 1001, 1002); err != nil {
		t.Fatal(err)
	}
	var notes []string
	note := func(s string) { notes = append(notes, s) }
	if u := MountUser(owned, "1000:1000", note); u != "1001:1002" || len(notes) != 0 {
		t.Errorf("owned: %q, notes %q", u, notes)
	}
	if u := MountUser(filepath.Join(d, "absent"), "1000:1000", note); u != "1000:1000" || len(notes) != 0 {
		t.Errorf("absent: %q, notes %q", u, notes)
	}
	if u := MountUser(d, "1000:1000", note); u != "1000:1000" || len(notes) != 1 ||
		!strings.Contains(notes[0], d+" belongs to root") || !strings.Contains(notes[0], "chown -R 1000:1000 "+d) || !strings.Contains(notes[0], "--user 0:0") {
		t.Errorf("root-owned: %q, notes %q", u, notes)
	}
}
