package integration

import (
	"regexp"
	"strings"
	"testing"
)

// TestDockerCheckpointRestore: on a docker up sandbox the helper
// checkpoints the workspace in the up volume, diff names what changed and
// restore brings it back; the fallback path (no helper) and a one-shot
// --image sandbox refuse, saying why.
func TestDockerCheckpointRestore(t *testing.T) {
	id, _ := piUp(t, "checkpoint")
	target := []string{"--backend", "docker", "--container", id}
	mustBash(t, id, `mkdir -p d e && printf 'one\ntwo\n' > a.txt && printf x > d/f && chmod 600 d/f && ln -s /etc/passwd link`)
	out, errs, code := pi(t, "", append([]string{"checkpoint", "--name", "first"}, target...)...)
	if code != 0 || !regexp.MustCompile(`^[0-9a-f]{12}\n$`).MatchString(out) {
		t.Fatalf("checkpoint: code %d, out %q, err %s", code, out, errs)
	}
	first := strings.TrimSpace(out)
	mustBash(t, id, `printf 'one\nTWO\n' > a.txt && rm -r d && rmdir e && echo new > n.txt && rm link && ln -s a.txt link`)
	out, errs, code = pi(t, "", append([]string{"diff", "first"}, append(target, "--name-status")...)...)
	if want := "M\ta.txt\nD\td/\nD\td/f\nD\te/\nM\tlink\nA\tn.txt\n"; code != 0 || out != want {
		t.Errorf("diff --name-status: code %d, out\n%s\nwant\n%s\nerr %s", code, out, want, errs)
	}
	out, errs, code = pi(t, "", append(append([]string{"restore"}, target...), first)...)
	if code != 0 || !strings.Contains(errs, "pre-restore-1") {
		t.Fatalf("restore: code %d, out %q, err %s", code, out, errs)
	}
	got := mustBash(t, id, `cat a.txt d/f; echo; stat -c %a d/f; ls -d e; readlink link; ls n.txt 2>&1 | grep -c 'No such'`)
	if want := "one\ntwo\nx\n600\ne\n/etc/passwd\n1\n"; got != want {
		t.Errorf("after restore:\n%s\nwant\n%s", got, want)
	}
	out, _, code = pi(t, "", append([]string{"diff", "--name-status", first}, target...)...)
	if code != 0 || out != "" {
		t.Errorf("diff after restore: code %d, %q", code, out)
	}

	_, errs, code = pi(t, "", append([]string{"checkpoint", "--no-helper"}, target...)...)
	if code != 2 || !strings.Contains(errs, "helper") {
		t.Errorf("checkpoint on the fallback path: code %d, err %s", code, errs)
	}
	needImage(t, "pi-sandbox/busybox")
	_, errs, code = pi(t, "", "checkpoint", "--image", "pi-sandbox/busybox")
	if code != 2 || !strings.Contains(errs, "--image one-shot sandbox") {
		t.Errorf("checkpoint on --image: code %d, err %s", code, errs)
	}
}
