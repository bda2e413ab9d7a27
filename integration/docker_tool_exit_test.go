package integration

import (
	"strings"
	"testing"
)

// TestDockerToolExitStatus: `tool`'s exit status on docker. A result exits
// 0 (an error result too), 1 under --fail when it is an error result; an
// image the engine does not have is a refused configuration: exit 2, the
// reason on stderr, nothing on stdout.
func TestDockerToolExitStatus(t *testing.T) {
	needImage(t, "pi-sandbox/busybox")
	docker := []string{"tool", "--backend", "docker", "--image", "pi-sandbox/busybox"}
	run := func(args ...string) (string, string, int) {
		return pi(t, "", append(append([]string{}, docker...), args...)...)
	}

	out, errs, code := run("bash", `{"command":"false"}`)
	if code != 0 || out != `{"content":[{"type":"text","text":"(no output)\n\nCommand exited with code 1"}],"isError":true}`+"\n" {
		t.Errorf("bash false: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	out, errs, code = run("--fail", "--text", "bash", `{"command":"echo hi; exit 3"}`)
	if code != 1 || out != "hi\n\n\nCommand exited with code 3\n" {
		t.Errorf("--fail --text exit 3: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	out, errs, code = run("--fail", "--text", "bash", `{"command":"id -u"}`)
	if code != 0 || out != "1000\n" {
		t.Errorf("--fail --text id -u: exit %d, stdout %q, stderr %q", code, out, errs)
	}

	missing := "pi-sandbox/no-such-image-" + runID
	out, errs, code = pi(t, "", "tool", "--backend", "docker", "--image", missing, "bash", `{"command":"true"}`)
	if code != 2 || out != "" || !strings.Contains(errs, "image "+missing+" is not on the engine") || strings.Contains(errs, "transport") {
		t.Errorf("missing image: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
