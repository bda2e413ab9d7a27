package main

import (
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/sandbox/open"
)

func TestDropDeadSpillPath(t *testing.T) {
	mk := func() *loop.Result {
		return &loop.Result{Content: []loop.Content{{Type: "text", Text: "3000\n\n[Showing lines 1001-3000 of 3000. Full output: /var/lib/pi-sandbox/sb-x/spill/pi-bash-1.log]"}},
			Details: map[string]any{"fullOutputPath": "/var/lib/pi-sandbox/sb-x/spill/pi-bash-1.log", "truncation": map[string]any{}}}
	}
	res := mk()
	dropDeadSpillPath(open.Config{Backend: "docker", Docker: open.DockerConfig{Image: "img"}}, res)
	if txt := res.Content[0].Text; strings.Contains(txt, "/spill/") || !strings.Contains(txt, "Full output: not kept (--image") || !strings.HasSuffix(txt, "]") {
		t.Errorf("text %q", txt)
	}
	if d := res.Details.(map[string]any); d["fullOutputPath"] != nil || d["truncation"] == nil {
		t.Errorf("details %v", d)
	}
	res = mk()
	dropDeadSpillPath(open.Config{Backend: "docker", Docker: open.DockerConfig{Container: "c"}}, res)
	if !strings.Contains(res.Content[0].Text, "/spill/pi-bash-1.log]") {
		t.Errorf("a --container result was rewritten: %q", res.Content[0].Text)
	}
}
