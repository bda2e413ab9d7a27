package tools_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops/local"
	"github.com/pi-sandbox/pi-sandbox/ops/savedout"
	"github.com/pi-sandbox/pi-sandbox/tools"
)

// TestBashSavedOutputTotal: the sandbox's saved outputs stop at their total
// (ops.Info.SavedOutputTotal), counting the files of every working
// directory under the spill root: the file that reaches it is cut with a
// note and the result says "incomplete"; the next is not saved at all.
// With the helper (which saves the output in the target) and without.
func TestBashSavedOutputTotal(t *testing.T) {
	for _, noHelper := range []bool{false, true} {
		t.Run(map[bool]string{false: "helper", true: "nohelper"}[noHelper], func(t *testing.T) {
			root := t.TempDir()
			if err := os.Mkdir(filepath.Join(root, "other"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, "other", "pi-bash-old.log"), make([]byte, 150000), 0o600); err != nil {
				t.Fatal(err)
			}
			spill := filepath.Join(root, "spill")
			b, err := local.New(t.Context(), local.Config{WorkDir: t.TempDir(), SpillDir: spill, NoHelper: noHelper})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			info := b.Info()
			if info.Has("helper") == noHelper {
				t.Fatalf("helper capability %v, want %v", info.Has("helper"), !noHelper)
			}
			info.SavedOutputTotal = 250000
			tool := tools.NewBash(b, b, info)
			cmd := map[string]any{"command": "yes 0123456789 | head -c 300000"}

			text, _, err := localRun(t, tool, t.Context(), cmd)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text, "(incomplete: ") || !strings.Contains(text, savedout.ErrTotal.Error()+" of 250000 bytes") {
				t.Errorf("first call's notice: %q", text[strings.LastIndex(text, "\n["):])
			}
			ents, err := os.ReadDir(spill)
			if err != nil || len(ents) != 1 {
				t.Fatalf("spill directory %v, %v; want one file", ents, err)
			}
			data, err := os.ReadFile(filepath.Join(spill, ents[0].Name()))
			if err != nil {
				t.Fatal(err)
			}
			head, note, _ := strings.Cut(string(data), "\n[pi-sandbox: output after the first 100000 bytes was not saved: ")
			if len(head) != 100000 || !strings.HasPrefix(head, "0123456789\n") || !strings.Contains(note, "total of 250000 bytes") {
				t.Errorf("saved file: %d bytes before the note, note %q", len(head), note)
			}

			text, _, err = localRun(t, tool, t.Context(), cmd)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text, "Full output: not saved (") || !strings.Contains(text, savedout.ErrTotal.Error()) {
				t.Errorf("second call's notice: %q", text[strings.LastIndex(text, "\n["):])
			}
			if ents, _ := os.ReadDir(spill); len(ents) != 1 {
				t.Errorf("%d files after a call with no room, want 1", len(ents))
			}
		})
	}
}
