package spillkey

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
)

func TestKey(t *testing.T) {
	if Key("", "/w") == Key("", "/v") || Key("docker:c", "/w") == Key("docker:d", "/w") || Key("", "/w") == Key("x", "/w") {
		t.Error("keys collide")
	}
	if Key("docker:c", "/w") != Key("docker:c", "/w") {
		t.Error("key not stable")
	}
}

// spillFiles makes n spill files in dir, the i-th aged i minutes, and one
// older than MaxAge.
func spillFiles(t *testing.T, dir string, n int) (old string) {
	now := time.Now()
	for i := range n {
		f := filepath.Join(dir, fmt.Sprintf("pi-bash-%04d.log", i))
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		m := now.Add(-time.Duration(i) * time.Minute)
		os.Chtimes(f, m, m)
	}
	old = filepath.Join(dir, "pi-bash-old.log")
	os.WriteFile(old, []byte("x"), 0o600)
	m := now.Add(-MaxAge - time.Hour)
	os.Chtimes(old, m, m)
	return old
}

func checkCleaned(t *testing.T, dir, old string) {
	t.Helper()
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("a spill file older than %s survived: %v", MaxAge, err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != MaxFiles {
		t.Errorf("%d files kept, want %d", len(ents), MaxFiles)
	}
	if _, err := os.Stat(filepath.Join(dir, "pi-bash-0000.log")); err != nil {
		t.Errorf("the newest file went: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("pi-bash-%04d.log", MaxFiles))); !os.IsNotExist(err) {
		t.Errorf("a file beyond the newest %d survived", MaxFiles)
	}
}

// TestLocalCleansByAge: local spill files (up to 1 GiB each) used to stay
// for good; opening a sandbox now removes week-old ones and keeps the
// newest MaxFiles of its directory.
func TestLocalCleansByAge(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dir, err := Local("/some/project")
	if err != nil {
		t.Fatal(err)
	}
	other, err := Local("/other/project")
	if err != nil {
		t.Fatal(err)
	}
	oldOther := spillFiles(t, other, 1)
	old := spillFiles(t, dir, MaxFiles+5)
	if again, err := Local("/some/project"); err != nil || again != dir {
		t.Fatalf("Local again = %s, %v; want %s", again, err, dir)
	}
	checkCleaned(t, dir, old)
	if _, err := os.Stat(oldOther); !os.IsNotExist(err) {
		t.Error("an old file of another sandbox's directory survived")
	}
}

func TestLocalRefusesForeignMode(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	base := filepath.Join(tmp, fmt.Sprintf("pi-sandbox-%d", os.Getuid()))
	if err := os.Mkdir(base, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Local("/p"); err == nil || !strings.Contains(err.Error(), "0700") {
		t.Fatalf("Local under a 0755 base = %v, want a refusal", err)
	}
}

// TestScript runs the target-side function with the host's sh: the keyed
// directory, its checks and the same cleaning.
func TestScript(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		testenv.SkipOrFail(t, "no sh: "+err.Error())
	}
	parent := t.TempDir()
	run := func() (string, error) {
		out, err := exec.Command(sh, "-c", Script+`spill_dir "$1" "$2"`, "sh", parent, Key("docker:c", "/w")).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	dir, err := run()
	want := filepath.Join(parent, BaseName(os.Getuid()), Key("docker:c", "/w"))
	if err != nil || dir != want {
		t.Fatalf("spill_dir = %q, %v; want %s", dir, err, want)
	}
	old := spillFiles(t, dir, MaxFiles+5)
	if again, err := run(); err != nil || again != dir {
		t.Fatalf("again: %q, %v", again, err)
	}
	checkCleaned(t, dir, old)
	os.Chmod(filepath.Dir(dir), 0o755)
	if out, err := run(); err == nil || out != "" {
		t.Fatalf("spill_dir under a 0755 base = %q, %v; want a failure", out, err)
	}
}
