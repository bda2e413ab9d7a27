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
	"github.com/pi-sandbox/pi-sandbox/ops/k8s"
)

// TestK8sProbeCache: the probe of an up pod is kept on this host with the
// shim's path; a later backend on the pod uses it, and one that finds it
// wrong probes again and keeps the right one.
func TestK8sProbeCache(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	pod := upPod(t, k8sBusybox, "probecache")
	dir := filepath.Join(os.Getenv("XDG_CACHE_HOME"), "pi-sandbox", "probe")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := func(what string) {
		t.Helper()
		b := newK8s(t, k8s.Config{Pod: pod}, "probecache")
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
	if !strings.Contains(text, "\nshim=/") || !strings.Contains(text, "workdir_ok=") {
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
