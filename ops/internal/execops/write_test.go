package execops

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// TestWriteInPlaceNotTruncatedByCutStream (17.13): where WriteFile cannot
// rename (the directory is not writable) it writes in place; a transfer
// cut halfway (the client died) used to truncate the target to the part
// that arrived, and reported success. It must fail and leave the file as
// it was.
func TestWriteInPlaceNotTruncatedByCutStream(t *testing.T) {
	var cred *syscall.Credential
	if os.Getuid() == 0 {
		// Root writes into any directory: run the scripts as nobody.
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	top := t.TempDir()
	dir := filepath.Join(top, "ro")
	stage := filepath.Join(top, "run")
	for _, d := range []string{dir, stage} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{filepath.Dir(top), top} {
		os.Chmod(d, 0o755)
	}
	os.Chmod(stage, 0o777)
	f := filepath.Join(dir, "f")
	if err := os.WriteFile(f, []byte("ORIGINAL CONTENT\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	os.Chmod(f, 0o666)
	if cred == nil {
		os.Chmod(dir, 0o555)
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
	}
	o := New(Config{Exec: hostExec{cred: cred, cut: 10}, Name: "hostexec"})
	o.SetTarget(Target{WorkDir: top, Shell: "/bin/sh", RunDir: stage})
	err := o.WriteFile(t.Context(), f, []byte(strings.Repeat("new content ", 100)), 0o644)
	if ops.ErrnoOf(err) != ops.EIO {
		t.Errorf("WriteFile over a cut stream = %v, want EIO", err)
	}
	if got, _ := os.ReadFile(f); string(got) != "ORIGINAL CONTENT\n" {
		t.Errorf("the target after a cut transfer: %q", got)
	}
	if ents, _ := os.ReadDir(stage); len(ents) != 0 {
		t.Errorf("staged copies left: %v", ents)
	}
	// The whole transfer still lands in place.
	o = New(Config{Exec: hostExec{cred: cred}, Name: "hostexec"})
	o.SetTarget(Target{WorkDir: top, Shell: "/bin/sh", RunDir: stage})
	if err := o.WriteFile(t.Context(), f, []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(f); string(got) != "new\n" {
		t.Errorf("in-place write: %q", got)
	}
}
