package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestLeftovers(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"pi-sandbox-spill-123", fmt.Sprintf("pi-sandbox-%d", os.Getuid()), "TestX001"} {
		if err := os.Mkdir(filepath.Join(dir, n), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if got := leftovers(dir); !slices.Equal(got, []string{"TestX001", "pi-sandbox-spill-123"}) {
		t.Errorf("leftovers = %q", got)
	}
}
