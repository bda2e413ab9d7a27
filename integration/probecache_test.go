package integration

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/docker"
	"github.com/pi-sandbox/pi-sandbox/ops/k8s"
)

// TestK8sProbeCache: checkProbeCache on an up pod.
func TestK8sProbeCache(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	pod := upPod(t, k8sBusybox, "probecache")
	checkProbeCache(t, func() ops.Backend { return newK8s(t, k8s.Config{Pod: pod}, "probecache") })
}

// TestDockerProbeCache: checkProbeCache on an up container.
func TestDockerProbeCache(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	id, _ := piUp(t, "probecache")
	checkProbeCache(t, func() ops.Backend { return newBackend(t, docker.Config{Container: id}) })
}

// checkProbeCache: the probe of an up sandbox is kept on this host with
// the shim's path; a later backend on it uses it, and one that finds it
// wrong probes again and keeps the right one. XDG_CACHE_HOME is the
// test's.
func checkProbeCache(t *testing.T, open func() ops.Backend) {
	t.Helper()
	dir := filepath.Join(os.Getenv("XDG_CACHE_HOME"), "pi-sandbox", "probe")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := func(what string) {
		t.Helper()
		b := open()
		var out bytes.Buffer
		if err := b.Run(ctx, &ops.Cmd{Command: "echo ok", Output: &out}); err != nil || out.String() != "ok\n" {
			t.Fatalf("%s: Run = %v, %q", what, err, out.String())
		}
		b.Close()
	}
	entry := func() (string, string) {
		t.Helper()
		ents, err := os.ReadDir(dir)
		if err != nil || len(ents) != 1 {
			t.Fatalf("probe cache: %v, %v; want one entry", ents, err)
		}
		p := filepath.Join(dir, ents[0].Name())
		b, _ := os.ReadFile(p)
		return p, string(b)
	}
	run("first")
	p, text := entry()
	if !strings.Contains(text, "\nshim=/") || !strings.Contains(text, "workdir") {
		t.Fatalf("the kept probe %q has no shim or no working directory", text)
	}
	run("from the cache")
	if err := os.WriteFile(p, []byte("garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run("with a wrong entry")
	if _, text := entry(); !strings.Contains(text, "\nshim=/") {
		t.Errorf("the entry was not made again: %q", text)
	}
}
