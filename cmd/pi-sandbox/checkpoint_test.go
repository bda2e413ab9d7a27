package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCheckpointDiffRestoreLocal: checkpoint, diff in every form and
// restore on the local backend, backend flags before and after the
// arguments.
func TestCheckpointDiffRestoreLocal(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	wd := t.TempDir()
	w := func(name, data string) {
		os.MkdirAll(filepath.Dir(filepath.Join(wd, name)), 0o755)
		if err := os.WriteFile(filepath.Join(wd, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := run(t, "diff", "--workdir", wd)
	if code != 1 || out != "" || !strings.Contains(errs, "no checkpoint yet") {
		t.Fatalf("diff with no checkpoint: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	w("a.txt", "one\ntwo\n")
	w("gone.txt", "bye\n")
	w("debug.log", "excluded\n")
	os.Mkdir(filepath.Join(wd, "empty"), 0o755)
	code, out, errs = run(t, "checkpoint", "--workdir", wd, "--name", "first", "--exclude", "*.log")
	id := regexp.MustCompile(`^[0-9a-f]{12}\n$`)
	if code != 0 || !id.MatchString(out) || errs != "" {
		t.Fatalf("checkpoint: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	first := strings.TrimSpace(out)

	w("a.txt", "one\nTWO\n")
	os.Remove(filepath.Join(wd, "gone.txt"))
	w("new/file.txt", "hello\n")
	os.Remove(filepath.Join(wd, "empty"))
	w("debug.log", "changed, excluded\n")
	code, out, errs = run(t, "diff", "first", "--name-status", "--workdir", wd)
	if want := "M\ta.txt\nD\tempty/\nD\tgone.txt\nA\tnew/\nA\tnew/file.txt\n"; code != 0 || out != want {
		t.Errorf("diff --name-status: exit %d, stdout\n%s\nwant\n%s\nstderr %q", code, out, want, errs)
	}
	code, out, _ = run(t, "diff", "--workdir", wd)
	if code != 0 || !strings.Contains(out, "diff --git a/a.txt b/a.txt\n") || !strings.Contains(out, "-two\n+TWO\n") {
		t.Errorf("diff: exit %d, stdout\n%s", code, out)
	}
	code, out, _ = run(t, "diff", "--stat", "--workdir", wd)
	if code != 0 || !strings.Contains(out, " 3 files changed, 2 insertions(+), 2 deletions(-)\n") {
		t.Errorf("diff --stat: exit %d, stdout\n%s", code, out)
	}
	code, out, _ = run(t, "diff", "--json", "--workdir", wd)
	var d diffJSON
	if err := json.Unmarshal([]byte(out), &d); code != 0 || err != nil || d.From.ID != first || d.To != nil || len(d.Changes) != 5 {
		t.Errorf("diff --json: exit %d, %v, %s", code, err, out)
	}

	code, out, errs = run(t, "restore", "--workdir", wd, "first")
	if code != 0 || !id.MatchString(out) || !strings.Contains(errs, "pre-restore-1") {
		t.Fatalf("restore: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	pre := strings.TrimSpace(out)
	for name, want := range map[string]string{"a.txt": "one\ntwo\n", "gone.txt": "bye\n", "debug.log": "changed, excluded\n"} {
		if b, err := os.ReadFile(filepath.Join(wd, name)); string(b) != want {
			t.Errorf("%s after restore: %q (%v), want %q", name, b, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(wd, "new")); !os.IsNotExist(err) {
		t.Errorf("new/ is still there: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(wd, "empty")); err != nil || !fi.IsDir() {
		t.Errorf("empty/ did not come back: %v", err)
	}
	code, out, _ = run(t, "diff", "--name-status", "--workdir", wd, "first")
	if code != 0 || out != "" {
		t.Errorf("diff after restore: exit %d, %q", code, out)
	}

	code, out, _ = run(t, "checkpoint", "ls", "--json", "--workdir", wd)
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); code != 0 || err != nil || len(rows) != 2 || rows[0]["id"] != first || rows[1]["name"] != "pre-restore-1" {
		t.Errorf("checkpoint ls --json: exit %d, %v\n%s", code, err, out)
	}
	if code, _, errs = run(t, "checkpoint", "rm", pre, "--workdir", wd); code != 0 {
		t.Errorf("checkpoint rm: exit %d, %s", code, errs)
	}
	if code, _, errs = run(t, "restore", "--workdir", wd, pre); code != 1 || !strings.Contains(errs, "no such checkpoint") {
		t.Errorf("restore of a removed checkpoint: exit %d, %s", code, errs)
	}
	if code, _, errs = run(t, "checkpoint", "--workdir", wd, "--exclude", "[x"); code != 2 || !strings.Contains(errs, "not a valid glob") {
		t.Errorf("a bad pattern: exit %d, %s", code, errs)
	}
}

// TestCheckpointExportImportLocal: export from one working directory,
// import into another (the id alone on stdout), restore there; a tar that
// is not an export is refused with exit 2 and nothing recorded.
func TestCheckpointExportImportLocal(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	src, dst := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(src, "d/e"), 0o755)
	os.WriteFile(filepath.Join(src, "d/e/f.sh"), []byte("#!/bin/sh\necho hi\n"), 0o755)
	os.Symlink("d/e/f.sh", filepath.Join(src, "link"))
	code, out, errs := run(t, "checkpoint", "--workdir", src, "--name", "base")
	if code != 0 {
		t.Fatalf("checkpoint: exit %d, %s", code, errs)
	}
	var tarOut, errb bytes.Buffer
	if code := runMain(context.Background(), []string{"checkpoint", "export", "base", "--workdir", src}, stdio{strings.NewReader(""), &tarOut, &errb}); code != 0 {
		t.Fatalf("checkpoint export: exit %d, %s", code, errb.String())
	}
	var idOut bytes.Buffer
	errb.Reset()
	code = runMain(context.Background(), []string{"checkpoint", "import", "--workdir", dst}, stdio{bytes.NewReader(tarOut.Bytes()), &idOut, &errb})
	if code != 0 || !regexp.MustCompile(`^[0-9a-f]{12}\n$`).MatchString(idOut.String()) {
		t.Fatalf("checkpoint import: exit %d, stdout %q, stderr %s", code, idOut.String(), errb.String())
	}
	if code, _, errs := run(t, "restore", "--workdir", dst, "base"); code != 0 {
		t.Fatalf("restore of the imported checkpoint: exit %d, %s", code, errs)
	}
	b, err := os.ReadFile(filepath.Join(dst, "link"))
	fi, _ := os.Stat(filepath.Join(dst, "d/e/f.sh"))
	if err != nil || string(b) != "#!/bin/sh\necho hi\n" || fi.Mode().Perm() != 0o755 {
		t.Fatalf("imported tree: %q %v %v", b, fi, err)
	}
	if l, _ := os.Readlink(filepath.Join(dst, "link")); l != "d/e/f.sh" {
		t.Fatalf("link target %q", l)
	}

	errb.Reset()
	idOut.Reset()
	code = runMain(context.Background(), []string{"checkpoint", "import", "--workdir", dst}, stdio{strings.NewReader(strings.Repeat("not a tar ", 200)), &idOut, &errb})
	if code != 2 || idOut.Len() != 0 || !strings.Contains(errb.String(), "not a checkpoint export") {
		t.Fatalf("import of junk: exit %d, stdout %q, stderr %s", code, idOut.String(), errb.String())
	}
	_, out, _ = run(t, "checkpoint", "ls", "--json", "--workdir", dst)
	var rows []map[string]any
	if json.Unmarshal([]byte(out), &rows); len(rows) != 2 { // the import and restore's pre-restore-1
		t.Fatalf("checkpoints after a refused import: %s", out)
	}
	if code, _, errs := run(t, "checkpoint", "export", "--workdir", src); code != 2 || !strings.Contains(errs, "want the ID") {
		t.Fatalf("export without an id: exit %d, %s", code, errs)
	}
}

// TestBatchAutoCheckpoint: batch --auto-checkpoint leaves one checkpoint
// per write or bash call (call-N, found by the tool-call id too), and
// diff between two shows that step.
func TestBatchAutoCheckpoint(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	wd := t.TempDir()
	in := `[{"id":"w1","name":"write","arguments":{"path":"a.txt","content":"one\n"}},
	{"id":"r1","name":"read","arguments":{"path":"a.txt"}},
	{"id":"b1","name":"bash","arguments":{"command":"echo two > b.txt"}}]`
	_, errs, code := cli(t, in, "batch", "--sequential", "--auto-checkpoint", "--workdir", wd, "--results")
	if code != 0 {
		t.Fatalf("batch --auto-checkpoint: exit %d, %s", code, errs)
	}
	out, _, _ := cli(t, "", "checkpoint", "ls", "--json", "--workdir", wd)
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 2 || rows[0]["name"] != "call-1" || rows[1]["name"] != "call-3" {
		t.Fatalf("checkpoints after the batch: %s (%v)", out, err)
	}
	out, errs, code = cli(t, "", "diff", "--name-status", "w1", "b1", "--workdir", wd)
	if code != 0 || out != "A\tb.txt\n" {
		t.Fatalf("diff w1 b1: exit %d, %q, %s", code, out, errs)
	}
}
