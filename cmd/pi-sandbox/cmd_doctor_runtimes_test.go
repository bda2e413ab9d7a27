package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRuntimesDetail(t *testing.T) {
	const none = "AllowNetwork has no effect under runsc with --network=none: the sandbox has only a loopback interface"
	for _, c := range []struct {
		names  []string
		def    string
		gvisor *runscInfo
		want   string
	}{
		{[]string{"runc", "runsc"}, "runc", &runscInfo{version: "v0.0.0-20260905035102-160fafc42237", args: []string{"--network=none"}},
			"runc (default), runsc (gVisor v0.0.0-20260905035102-160fafc42237, runtime args --network=none; " + none + ")"},
		{[]string{"runc", "runsc"}, "runsc", &runscInfo{version: "release-20221219.0"},
			"runc, runsc (default) (gVisor release-20221219.0)"},
		{[]string{"runc"}, "runc", nil, "runc (default); no runsc (gVisor): `make runtimes` registers it"},
	} {
		if got := runtimesDetail(c.names, c.def, c.gvisor); got != c.want {
			t.Errorf("runtimesDetail(%q, %q, %+v) = %q, want %q", c.names, c.def, c.gvisor, got, c.want)
		}
	}
}

// TestRunscVersion: the version is the first line of `runsc --version`
// after "runsc version "; anything else says why it is unknown.
func TestRunscVersion(t *testing.T) {
	defer func(d time.Duration) { runscVersionTimeout = d }(runscVersionTimeout)
	runscVersionTimeout = time.Second
	dir := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := script("good", `echo "runsc version v0.0.0-20260905035102-160fafc42237"; echo "spec: 1.2.0"`)
	if got := runscVersion(t.Context(), good); got != "v0.0.0-20260905035102-160fafc42237" {
		t.Errorf("runscVersion(good) = %q", got)
	}
	for name, body := range map[string]string{
		"fails":   "exit 3",
		"strange": "echo hello",
		"endless": "yes",
	} {
		got := runscVersion(t.Context(), script(name, body))
		if !strings.HasPrefix(got, "version unknown (") || len(got) > 200 {
			t.Errorf("runscVersion(%s) = %q, want a short 'version unknown (…)'", name, got)
		}
	}
	if got := runscVersion(t.Context(), ""); !strings.HasPrefix(got, "version unknown") {
		t.Errorf("runscVersion(\"\") = %q", got)
	}
}
