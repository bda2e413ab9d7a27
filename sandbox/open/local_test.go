package open_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/sandbox/open"
)

// TestLocalSpillKeyedByWorkDir: a sandbox's full outputs are in a spill
// directory of its own working directory — the same one for a later
// sandbox on that directory (a one-shot CLI call's fullOutputPath stays
// readable), another for a sandbox elsewhere, which cannot read them.
func TestLocalSpillKeyedByWorkDir(t *testing.T) {
	ctx := context.Background()
	a, b := t.TempDir(), t.TempDir()
	openAt := func(wd string) (spill string, read func(string) (string, bool)) {
		sb, err := open.Open(ctx, open.Config{WorkDir: wd})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sb.Close() })
		return sb.Backend().Info().SpillDir, func(p string) (string, bool) {
			res, err := sb.Call(ctx, "read", map[string]any{"path": p})
			if err != nil {
				t.Fatal(err)
			}
			return res.Content[0].Text, res.IsError
		}
	}
	spillA, _ := openAt(a)
	spillA2, readA2 := openAt(a)
	spillB, readB := openAt(b)
	if spillA != spillA2 || spillA == spillB || filepath.Dir(spillA) != filepath.Dir(spillB) {
		t.Fatalf("spill directories: a %s, a again %s, b %s", spillA, spillA2, spillB)
	}
	t.Cleanup(func() { os.RemoveAll(spillA); os.RemoveAll(spillB) })
	f := filepath.Join(spillA, "pi-bash-0123456789abcdef.log")
	if err := os.WriteFile(f, []byte("full output of a"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, isErr := readA2(f); isErr || got != "full output of a" {
		t.Errorf("the next sandbox on a: %q (error %v)", got, isErr)
	}
	if got, isErr := readB(f); !isErr || !strings.Contains(got, "outside the sandbox") {
		t.Errorf("a sandbox on b read a's full output: %q (error %v)", got, isErr)
	}
}
