package integration

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops/ssh/sshtest"
)

// toolResult is the JSON `pi-sandbox tool` prints.
type toolResult struct {
	Content []struct{ Text string } `json:"content"`
	Details struct {
		FullOutputPath string `json:"fullOutputPath"`
	} `json:"details"`
	IsError bool `json:"isError"`
}

func parseTool(t *testing.T, what, out string, code int) toolResult {
	t.Helper()
	var r toolResult
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 || len(r.Content) == 0 {
		t.Fatalf("%s: exit %d, %q: %v", what, code, out, err)
	}
	return r
}

// checkFullOutputAcrossCalls is issue 16.1 through separate CLI processes:
// call 1 (in a) prints a fullOutputPath, call 2 (in a again) reads it
// through confinement, call 3 (in b, another project) is refused, with a
// message that names every root.
func checkFullOutputAcrossCalls(t *testing.T, flagsA, flagsB []string) {
	out, code := piTool(t, append(flagsA, "bash", `{"command":"seq 1 3000"}`)...)
	r := parseTool(t, "bash", out, code)
	p := r.Details.FullOutputPath
	if p == "" || !strings.Contains(r.Content[0].Text, "Full output: "+p) {
		t.Fatalf("bash printed no full output path: %s", out)
	}
	read := `{"path":"` + p + `","limit":3}`
	out, code = piTool(t, append(flagsA, "read", read)...)
	r = parseTool(t, "read in a", out, code)
	if r.IsError || !strings.HasPrefix(r.Content[0].Text, "1\n2\n3\n") {
		t.Fatalf("a later call on the same sandbox cannot read %s: %s", p, out)
	}
	out, code = piTool(t, append(flagsB, "read", read)...)
	r = parseTool(t, "read in b", out, code)
	txt := r.Content[0].Text
	if !r.IsError || !strings.Contains(txt, "outside the sandbox") {
		t.Fatalf("another project's sandbox read %s: %s", p, out)
	}
	if strings.Contains(txt, ", .") || strings.Contains(txt, "roots: ,") || strings.Contains(txt, ", ,") {
		t.Errorf("a root without a path in %q", txt)
	}
}

func TestDockerCLIFullOutputAcrossCalls(t *testing.T) {
	needImage(t, "pi-sandbox/busybox")
	id := upContainer(t, "pi-sandbox/busybox", "spill-cli")
	if out, err := exec.Command("docker", "exec", "-u", "1000:1000", id, "mkdir", "-p", "/workspace/a", "/workspace/b").CombinedOutput(); err != nil {
		t.Fatalf("mkdir: %v: %s", err, out)
	}
	flags := func(wd string) []string {
		return []string{"--backend", "docker", "--container", id, "--workdir", wd}
	}
	checkFullOutputAcrossCalls(t, flags("/workspace/a"), flags("/workspace/b"))
}

// TestDockerCLIImageFullOutputNotice: with --image the container, and the
// full output in it, is gone when the call returns; the notice says so
// instead of printing a dead path.
func TestDockerCLIImageFullOutputNotice(t *testing.T) {
	needImage(t, "pi-sandbox/busybox")
	out, code := piTool(t, "--backend", "docker", "--image", "pi-sandbox/busybox", "bash", `{"command":"seq 1 3000"}`)
	r := parseTool(t, "bash", out, code)
	if r.Details.FullOutputPath != "" || !strings.Contains(r.Content[0].Text, "Full output: not kept (--image") {
		t.Fatalf("--image result: %s", out)
	}
}

func TestSSHCLIFullOutputAcrossCalls(t *testing.T) {
	s := sshtest.Start(t)
	flags := func(wd string) []string {
		return []string{"--backend", "ssh", "--host", s.User + "@" + s.Addr(), "--identity", s.IdentityFile, "--known-hosts", s.KnownHostsFile, "--workdir", wd}
	}
	checkFullOutputAcrossCalls(t, flags(s.TempDir(t)), flags(s.TempDir(t)))
}
