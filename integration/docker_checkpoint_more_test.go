package integration

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDockerCheckpointExportImport: a checkpoint exported on local and
// imported into a docker up sandbox restores the same tree there (modes,
// an empty directory, a link); --auto-checkpoint is refused on a one-shot
// --image sandbox, saying why.
func TestDockerCheckpointExportImport(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "d/empty"), 0o755)
	os.WriteFile(filepath.Join(src, "d/run.sh"), []byte("#!/bin/sh\necho hi\n"), 0o750)
	os.WriteFile(filepath.Join(src, "secret"), []byte("s3cret\n"), 0o600)
	os.Symlink("d/run.sh", filepath.Join(src, "link"))
	out, errs, code := pi(t, "", "checkpoint", "--workdir", src, "--name", "base")
	if code != 0 {
		t.Fatalf("local checkpoint: code %d, %s", code, errs)
	}
	tarData, errs, code := pi(t, "", "checkpoint", "export", "base", "--workdir", src)
	if code != 0 || len(tarData) < 1024 {
		t.Fatalf("local export: code %d, %d bytes, %s", code, len(tarData), errs)
	}

	id, _ := piUp(t, "checkpoint-import")
	out, errs, code = pi(t, tarData, "checkpoint", "import", "--container", id)
	if code != 0 || !regexp.MustCompile(`^[0-9a-f]{12}\n$`).MatchString(out) {
		t.Fatalf("import into docker: code %d, out %q, err %s", code, out, errs)
	}
	imported := strings.TrimSpace(out)
	if _, errs, code = pi(t, "", "restore", imported, "--container", id); code != 0 {
		t.Fatalf("restore: code %d, %s", code, errs)
	}
	got := mustBash(t, id, `cat d/run.sh secret; stat -c '%a %n' d d/empty d/run.sh secret; readlink link`)
	want := "#!/bin/sh\necho hi\ns3cret\n755 d\n755 d/empty\n750 d/run.sh\n600 secret\nd/run.sh\n"
	if got != want {
		t.Errorf("the imported tree in docker:\n%s\nwant\n%s", got, want)
	}
	// And back: the docker checkpoint exported and imported locally.
	tar2, errs, code := pi(t, "", "checkpoint", "export", imported, "--container", id)
	if code != 0 || len(tar2) < 1024 {
		t.Fatalf("docker export: code %d, %s", code, errs)
	}
	dst := t.TempDir()
	if out, errs, code = pi(t, tar2, "checkpoint", "import", "--workdir", dst, "--name", "back"); code != 0 {
		t.Fatalf("local import: code %d, %s", code, errs)
	}
	if _, errs, code = pi(t, "", "restore", "back", "--workdir", dst); code != 0 {
		t.Fatalf("local restore: code %d, %s", code, errs)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "secret")); err != nil || string(b) != "s3cret\n" {
		t.Errorf("back on local: %q %v", b, err)
	}

	needImage(t, "pi-sandbox/busybox")
	_, errs, code = pi(t, `[{"name":"bash","arguments":{"command":"true"}}]`, "batch", "--auto-checkpoint", "--image", "pi-sandbox/busybox")
	if code != 2 || !strings.Contains(errs, "--auto-checkpoint") || !strings.Contains(errs, "--image one-shot sandbox") {
		t.Errorf("batch --auto-checkpoint on --image: code %d, err %s", code, errs)
	}
}

// TestDockerCheckpointFreeze: checkpoint --freeze stops what the
// sandbox's commands left running while it is taken and resumes it.
func TestDockerCheckpointFreeze(t *testing.T) {
	id, _ := piUp(t, "checkpoint-freeze")
	mustBash(t, id, `(while :; do echo tick >> ticks; sleep 0.05; done) > /dev/null 2>&1 &`)
	_, errs, code := pi(t, "", "checkpoint", "--freeze", "--container", id)
	m := regexp.MustCompile(`(\d+) processes of the sandbox were stopped`).FindStringSubmatch(errs)
	if code != 0 || m == nil || m[1] == "0" {
		t.Fatalf("checkpoint --freeze with a writer running: code %d, err %s", code, errs)
	}
	// Resumed: the writer goes on.
	got := mustBash(t, id, `a=$(wc -l < ticks); sleep 1; b=$(wc -l < ticks); [ "$b" -gt "$a" ] && echo growing; ps -o stat,args | grep -c '^T' || true`)
	if !strings.HasPrefix(got, "growing\n") || !strings.HasSuffix(got, "0\n") {
		t.Errorf("after the freeze: %q (want the writer growing and no stopped process)", got)
	}
}
