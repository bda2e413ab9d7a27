package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"
)

// The constants name the cache directories and the ldflags version; they must match what
// the tools modules really build.
func TestToolsVersions(t *testing.T) {
	for file, want := range map[string]string{
		"tools/k8s/go.mod":           "\tk8s.io/kubernetes " + kubeVersion + " ",
		"tools/containerd/go.mod":    "\tgithub.com/containerd/containerd/v2 " + containerdVersion + " ",
		"tools/agent-sandbox/go.mod": "\tsigs.k8s.io/agent-sandbox " + agentSandboxVersion + " ",
	} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), want) {
			t.Errorf("%s does not contain %q", file, want)
		}
	}
	// Every staging module must be re-pointed at the matching v0 version.
	b, _ := os.ReadFile("tools/k8s/go.mod")
	staging := "v0" + strings.TrimPrefix(kubeVersion, "v1")
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "=>") && !strings.HasSuffix(line, " "+staging) {
			t.Errorf("tools/k8s/go.mod: %q is not at %s", strings.TrimSpace(line), staging)
		}
	}
}

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{
		`/a/b`:            "/a/b",
		`/a\040b`:         "/a b",
		`/x\011y\134z`:    "/x\ty\\z",
		`/trailing\04`:    `/trailing\04`,
		`/not\999octal`:   `/not\999octal`,
		`/two\040\040end`: "/two  end",
	} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

// The pause archive must be a docker-save archive naming the pinned sandbox image, whose
// one layer holds /pause.
func TestPauseArchive(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "pause")
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\x7fELF fake pause")
	f.Close()
	b, err := pauseArchive(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name], _ = io.ReadAll(tr)
	}
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil || len(manifest) != 1 {
		t.Fatalf("manifest.json: %v %s", err, files["manifest.json"])
	}
	m := manifest[0]
	if len(m.RepoTags) != 1 || m.RepoTags[0] != "registry.k8s.io/pause:"+pauseTag {
		t.Errorf("RepoTags %v", m.RepoTags)
	}
	if _, ok := files[m.Config]; !ok || len(m.Layers) != 1 {
		t.Fatalf("config %q or layers %v missing", m.Config, m.Layers)
	}
	lr := tar.NewReader(bytes.NewReader(files[m.Layers[0]]))
	h, err := lr.Next()
	if err != nil || h.Name != "pause" || h.Mode&0o111 == 0 {
		t.Fatalf("layer entry %+v, %v; want an executable pause", h, err)
	}
	if got, _ := io.ReadAll(lr); string(got) != "\x7fELF fake pause" {
		t.Errorf("layer content %q", got)
	}
}

func TestCRDName(t *testing.T) {
	manifest := "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n" +
		"  annotations:\n    controller-gen.kubebuilder.io/version: v0.19.0\n    name: not-this\n" +
		"  name: sandboxes.agents.x-k8s.io\nspec:\n  names:\n    kind: Sandbox\n"
	if got := crdName([]byte(manifest)); got != "sandboxes.agents.x-k8s.io" {
		t.Errorf("crdName = %q", got)
	}
	if got := crdName([]byte("kind: ConfigMap\ndata:\n  name: x\n")); got != "" {
		t.Errorf("crdName of a manifest without metadata = %q", got)
	}
}

// Only the lines after the offset count, and a kind is started only by its own
// "Starting workers" line.
func TestWorkersStarted(t *testing.T) {
	line := func(msg, kind string) string {
		return `{"level":"info","msg":"` + msg + `","controller":"x","controllerKind":"` + kind + `"}` + "\n"
	}
	var old string
	for _, k := range agentSandboxKinds {
		old += line("Starting workers", k)
	}
	current := "not json\n" + line("Starting Controller", "SandboxWarmPool")
	for _, k := range agentSandboxKinds[:len(agentSandboxKinds)-1] {
		current += line("Starting workers", k)
	}
	p := t.TempDir() + "/controller.log"
	if err := os.WriteFile(p, []byte(old+current), 0o644); err != nil {
		t.Fatal(err)
	}
	err := workersStarted(p, int64(len(old)))
	if err == nil || !strings.Contains(err.Error(), "SandboxWarmPool") {
		t.Fatalf("workersStarted = %v; want SandboxWarmPool missing", err)
	}
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(line("Starting workers", "SandboxWarmPool"))
	f.Close()
	if err := workersStarted(p, int64(len(old))); err != nil {
		t.Fatalf("workersStarted = %v", err)
	}
}
